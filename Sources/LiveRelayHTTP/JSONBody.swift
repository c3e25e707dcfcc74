import Foundation
import Hummingbird
import LiveRelayCore
import NIOCore
import LiveRelayPostgres
import PostgresNIO
import Synchronization

/// A JSON request body with typed field access; every problem names the field.
struct JSONBody: Sendable {
    /// The largest body any route accepts; larger ones get 413.
    static let maximumSize = 64 * 1024

    let members: [String: JSONValue]

    static func read(_ request: Request) async throws -> JSONBody {
        let buffer = try await request.body.collect(upTo: maximumSize)
        guard let value = try? JSONValue(parsing: String(buffer: buffer)), case .object(let members) = value else {
            throw APIError.badRequest("the body must be a JSON object")
        }
        return JSONBody(members: members)
    }

    func string(_ name: String, maxLength: Int = 4096) throws -> String {
        if case .string("")? = members[name] { throw APIError.badRequest("\(name) must not be empty") }
        guard let value = try optionalString(name, maxLength: maxLength) else { throw APIError.badRequest("\(name) is required") }
        return value
    }

    func optionalString(_ name: String, maxLength: Int = 4096) throws -> String? {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let value)?:
            // An empty optional string means "not given".
            guard !value.isEmpty else { return nil }
            guard !value.utf8.contains(0) else { throw APIError.badRequest("\(name) must not contain NUL characters") }
            guard value.utf8.count <= maxLength else { throw APIError.badRequest("\(name) is longer than \(maxLength) bytes") }
            return value
        default: throw APIError.badRequest("\(name) must be a string")
        }
    }

    /// A required string a client may send under either of two names (`token` or `pushToken`): both may be given
    /// only with the same value.
    func string(_ name: String, or alias: String, maxLength: Int = 4096) throws -> String {
        let first = try optionalString(name, maxLength: maxLength)
        let second = try optionalString(alias, maxLength: maxLength)
        switch (first, second) {
        case (let value?, nil), (nil, let value?): return value
        case (let value?, let other?) where value == other: return value
        case (_?, _?): throw APIError.badRequest("\(name) and \(alias) differ: give one of them")
        case (nil, nil): throw APIError.badRequest("\(name) (or \(alias)) is required")
        }
    }

    /// An optional string that, when given, must not be empty (`title` and `body` of an alert: an empty one would
    /// show a blank notification).
    func optionalNonEmptyString(_ name: String, maxLength: Int = 4096) throws -> String? {
        if case .string("")? = members[name] {
            throw APIError.badRequest("\(name) must not be empty (leave it out for the default)")
        }
        return try optionalString(name, maxLength: maxLength)
    }

    func optionalObject(_ name: String) throws -> JSONValue? {
        switch members[name] {
        case nil, .null?: return nil
        case .object?: return members[name]
        default: throw APIError.badRequest("\(name) must be a JSON object")
        }
    }

    /// `platform`: `ios` when left out (the OpenCode app sends none) or `android` (an FCM registration token).
    func platform(_ name: String = "platform") throws -> Platform {
        guard let text = try optionalString(name, maxLength: 16) else { return .ios }
        guard let platform = Platform(rawValue: text) else {
            throw APIError.badRequest("\(name) must be ios or android")
        }
        return platform
    }

    func optionalEnvironment(_ name: String) throws -> APNsEnvironment? {
        guard let text = try optionalString(name, maxLength: 32) else { return nil }
        guard let environment = APNsEnvironment(rawValue: text) else { throw APIError.badRequest("\(name) must be sandbox or production") }
        return environment
    }
}

/// An error answered as JSON: `{ok:false, error}` with a status.
struct APIError: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var message: String

    static func badRequest(_ message: String) -> APIError { APIError(status: .badRequest, message: message) }
    static let unauthorized = APIError(status: .unauthorized, message: "authentication required: Authorization: Bearer <token>")
    static func forbidden(_ message: String) -> APIError { APIError(status: .forbidden, message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: .notFound, message: message) }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        jsonResponse(status, ["ok": .bool(false), "error": .string(message)])
    }
}

/// Turns every error into JSON: API errors as they are, oversized bodies as 413, others as 500 without details.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The router's paths, to tell "no such path" (404) from "not this method" (405).
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return jsonResponse(error.status, ["ok": .bool(false), "error": .string(error.message)])
        } catch let error where Self.refusal(error) != nil {
            // The database refused a value (bad encoding, out of range, a constraint or a trigger's check): the
            // caller's input. A duplicate key is a conflict.
            let refusal = Self.refusal(error)!
            let status: HTTPResponse.Status = refusal.serverInfo?[.sqlState] == "23505" ? .conflict : .badRequest
            return jsonResponse(status, ["ok": .bool(false), "error": .string(refusal.serverInfo?[.message] ?? "invalid value")])
        } catch let error as HTTPError where error.status == .notFound && !routes.methods(for: request.uri.path).isEmpty {
            let allowed = routes.methods(for: request.uri.path)
            var response = jsonResponse(.methodNotAllowed, ["ok": .bool(false), "error": .string("\(request.method) is not allowed on \(request.uri.path)")])
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch let error as HTTPError where error.status == .notFound {
            // No such route: the original relay's exact answer.
            return jsonResponse(.notFound, ["ok": .bool(false), "error": .string("Not found")])
        } catch let error as HTTPError {
            let message = error.status == .contentTooLarge ? "the body is larger than \(JSONBody.maximumSize) bytes" : (error.body ?? error.status.reasonPhrase)
            return jsonResponse(error.status, ["ok": .bool(false), "error": .string(message)])
        } catch let error as HTTPResponseError {
            let status = try error.response(from: request, context: context).status
            let message = status == .contentTooLarge ? "the body is larger than \(JSONBody.maximumSize) bytes" : status.reasonPhrase
            return jsonResponse(status, ["ok": .bool(false), "error": .string(message)])
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(safeDescription(error))"])
            return jsonResponse(.internalServerError, ["ok": .bool(false), "error": .string("internal error")])
        }
    }

    /// The database error behind `error` when it is a data exception (22…) or an integrity violation (23…),
    /// directly or inside a failed transaction.
    static func refusal(_ error: any Error) -> PSQLError? {
        let psql = (error as? PSQLError) ?? ((error as? PostgresTransactionError)?.closureError as? PSQLError)
        guard let psql, let state = psql.serverInfo?[.sqlState], state.hasPrefix("22") || state.hasPrefix("23") else { return nil }
        return psql
    }
}

/// The paths a router serves, filled once its routes are registered.
final class RouteTable: Sendable {
    private let patterns = Mutex<[(parts: [Substring], method: String)]>([])

    func set(_ routes: [(path: String, method: String)]) {
        patterns.withLock { $0 = routes.map { ($0.path.split(separator: "/"), $0.method) } }
    }

    /// The methods served on this path (with any parameters); a 404 from the router for one of them means a wrong method.
    func methods(for path: String) -> [String] {
        let parts = path.split(separator: "/")
        return patterns.withLock { patterns in
            patterns.filter { pattern in
                pattern.parts.count == parts.count && zip(pattern.parts, parts).allSatisfy { $0.hasPrefix(":") || $0 == $1 }
            }.map(\.method).sorted()
        }
    }
}
