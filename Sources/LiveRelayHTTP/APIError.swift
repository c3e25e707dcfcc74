import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore
import NIOCore
import NIOHTTP1
import LiveRelayPostgres
import PostgresNIO
import Synchronization

/// Bounds on what a request may send.
enum RequestLimits {
    /// The largest body any route accepts; larger ones get 413.
    static let maximumBodyBytes = 64 * 1024
}

/// An error answered as JSON: `{ok:false, error}` with a status.
struct APIError: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var message: String
    /// A 401 for a bearer token that was given and not taken: its challenge says `error="invalid_token"`.
    var invalidToken = false

    static func badRequest(_ message: String) -> APIError { APIError(status: .badRequest, message: message) }
    static let unauthorized = APIError(
        status: .unauthorized, message: "authentication required: Authorization: Bearer <token>")
    /// 401 for `caller`: the generic challenge, or what was wrong with the bearer token it gave.
    static func unauthorized(_ caller: Caller) -> APIError {
        switch caller.rejectedBearer {
        case nil, .valid?:
            return unauthorized
        case .expired(let device, let expiry)?:
            let when = Date(timeIntervalSince1970: TimeInterval(expiry)).formatted(.iso8601)
            return APIError(status: .unauthorized, message: """
                the device token for \(device.uuidString.lowercased()) expired at \(when); the app's backend mints \
                a new one with POST /v1/devices/{uuid}/token (admin)
                """, invalidToken: true)
        case .invalid?:
            return APIError(status: .unauthorized, message: """
                the bearer token is neither the admin token nor a device token signed by this relay (it was changed, \
                or signed with another LIVERELAY_TOKEN_SECRET)
                """, invalidToken: true)
        }
    }
    static func forbidden(_ message: String) -> APIError { APIError(status: .forbidden, message: message) }
    static func notFound(_ message: String) -> APIError { APIError(status: .notFound, message: message) }
    /// A field or parameter holding U+0000, which PostgreSQL stores in no text (and would refuse without its name).
    static func containsNUL(_ name: String) -> APIError {
        badRequest("\(name) must not contain NUL characters (\\u0000): the database cannot store them")
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = jsonResponse(status, ["ok": .bool(false), "error": .string(message)])
        if invalidToken { response.headers[.wwwAuthenticate] = #"Bearer realm="liverelay", error="invalid_token""# }
        return response
    }
}

extension StoreError {
    /// The HTTP status an operation's refusal is answered with.
    var httpStatus: HTTPResponse.Status {
        switch self {
        case .notFound: .notFound
        case .ambiguous, .conflict: .conflict
        case .invalidArgument, .refused: .badRequest
        case .unavailable: .serviceUnavailable
        }
    }
}

/// Turns every error into JSON: API errors as they are, oversized bodies as 413, others as 500 without details.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// The router's paths, to tell "no such path" (404) from "not this method" (405).
    let routes: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as StoreError {
            return jsonResponse(error.httpStatus, ["ok": .bool(false), "error": .string(error.message)])
        } catch let error where RelayStore.refusal(error) != nil {
            // The database refused a value (bad encoding, out of range, a constraint or a trigger's check): the
            // caller's input. A duplicate key is a conflict.
            let refusal = RelayStore.refusal(error)!
            return jsonResponse(refusal.httpStatus, ["ok": .bool(false), "error": .string(refusal.message)])
        } catch let error as HTTPError
                    where error.status == .notFound && !routes.methods(for: request.uri.path).isEmpty {
            let allowed = routes.methods(for: request.uri.path)
            let message = "\(request.method) is not allowed on \(request.uri.path)"
            var response = jsonResponse(.methodNotAllowed, ["ok": .bool(false), "error": .string(message)])
            response.headers[.allow] = allowed.joined(separator: ", ")
            return response
        } catch let error as HTTPError where error.status == .notFound {
            // No such route: the original relay's exact answer.
            return jsonResponse(.notFound, ["ok": .bool(false), "error": .string("Not found")])
        } catch let error as HTTPError {
            let message = error.status == .contentTooLarge
                ? "the body is larger than \(RequestLimits.maximumBodyBytes) bytes"
                : (error.body ?? error.status.reasonPhrase)
            return jsonResponse(error.status, ["ok": .bool(false), "error": .string(message)])
        } catch let error as HTTPParserError {
            // The client broke its request off mid-body (it closed the connection, or stopped sending until the
            // idle limit): the client's doing, and nobody is left to read the answer.
            context.logger.debug("request ended before its body", metadata: ["error": "\(error)"])
            let message = "the request ended before its body"
            return jsonResponse(.badRequest, ["ok": .bool(false), "error": .string(message)])
        } catch let error as HTTPResponseError {
            let status = try error.response(from: request, context: context).status
            let message = status == .contentTooLarge
                ? "the body is larger than \(RequestLimits.maximumBodyBytes) bytes" : status.reasonPhrase
            return jsonResponse(status, ["ok": .bool(false), "error": .string(message)])
        } catch {
            context.logger.error("request failed", metadata: ["error": "\(safeDescription(error))"])
            return jsonResponse(.internalServerError, ["ok": .bool(false), "error": .string("internal error")])
        }
    }
}

/// The paths a router serves, filled once its routes are registered.
final class RouteTable: Sendable {
    private let patterns = Mutex<[(parts: [Substring], method: String)]>([])

    func set(_ routes: [(path: String, method: String)]) {
        patterns.withLock { $0 = routes.map { ($0.path.split(separator: "/"), $0.method) } }
    }

    /// The methods served on this path (with any parameters); a 404 from the router for one of them means a wrong
    /// method.
    func methods(for path: String) -> [String] {
        let parts = path.split(separator: "/")
        return patterns.withLock { patterns in
            patterns.filter { pattern in
                pattern.parts.count == parts.count
                    && zip(pattern.parts, parts).allSatisfy { $0.hasPrefix(":") || $0 == $1 }
            }.map(\.method).sorted()
        }
    }
}
