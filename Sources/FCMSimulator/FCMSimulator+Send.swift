import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore
import NIOCore

extension FCMSimulator {
    /// An FCM error answer.
    struct Rejection: Error {
        var status: Int
        var googleStatus: String
        var message: String
        var details: [JSONValue] = []
        var retryAfter: Int? = nil

        /// A 400 whose `google.rpc.BadRequest` detail names the field, as FCM reports invalid arguments.
        static func invalid(_ field: String, _ message: String) -> Rejection {
            Rejection(status: 400, googleStatus: "INVALID_ARGUMENT", message: message, details: [
                .object(["@type": .string("type.googleapis.com/google.rpc.BadRequest"),
                         "fieldViolations": .array([
                             .object(["field": .string(field), "description": .string(message)]),
                         ])]),
                fcmError("INVALID_ARGUMENT"),
            ])
        }

        static func fcmError(_ code: String) -> JSONValue {
            .object([
                "@type": .string("type.googleapis.com/google.firebase.fcm.v1.FcmError"), "errorCode": .string(code),
            ])
        }

        var response: Response {
            FCMSimulator.googleError(status, googleStatus, message, details: details, retryAfter: retryAfter)
        }
    }

    /// `POST /v1/projects/<project>/messages:send`.
    func handleSend(_ request: Request, context: FCMSimulatorContext) async -> Response {
        let faults = state.withLock { $0.faults }
        if faults.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(faults.delayMilliseconds)) }
        if faults.resetRate > 0, Double.random(in: 0..<1) < faults.resetRate {
            state.withLock { $0.responses["reset", default: 0] += 1 }
            (context.channel.parent ?? context.channel).close(promise: nil)
            return Response(status: .serviceUnavailable)  // never reaches the client: its connection is gone
        }
        var token = ""
        do {
            guard context.parameters.get("method") == "messages:send" else {
                throw Rejection(status: 404, googleStatus: "NOT_FOUND", message: "unknown method")
            }
            let body = try await request.body.collect(upTo: 64 * 1024)
            let project = context.parameters.get("project") ?? ""
            var message = try validate(request, project: project, body: body, faults: faults)
            token = message.topic.map { "/topics/\($0)" } ?? message.token
            state.withLock { state in
                state.responses["200", default: 0] += 1
                state.sequence += 1
                message.sequence = state.sequence
                message.name = "projects/\(credentials.projectID)/messages/\(state.sequence)"
                state.messages.append(message)
                if state.messages.count > capacity { state.messages.removeFirst(state.messages.count - capacity) }
            }
            if printMessages {
                let data = JSONValue.object(message.data.mapValues { .string($0) })
                say("fcm-sim: 200 \(redactedToken(token)) \(data.compactText)")
            }
            let answer = JSONValue.object(["name": .string(message.name)])
            return Response(status: .ok, headers: [.contentType: "application/json; charset=UTF-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: answer.compactBytes)))
        } catch let rejection as Rejection {
            state.withLock { $0.responses[String(rejection.status), default: 0] += 1 }
            if printMessages {
                let status = "\(rejection.status) \(rejection.googleStatus)"
                say("fcm-sim: \(status) \(redactedToken(token)) (\(rejection.message))")
            }
            return rejection.response
        } catch {
            state.withLock { $0.responses["413", default: 0] += 1 }
            return Self.googleError(413, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 65536 bytes.")
        }
    }

    /// FCM's checks: authentication, project, message shape, data limits, then faults and the token's fate.
    func validate(_ request: Request, project: String, body: ByteBuffer, faults: FCMSimulatorFaults) throws
        -> RecordedMessage {
        let access = try authenticate(request, faults: faults)
        guard project == credentials.projectID else {
            throw Rejection(status: 403, googleStatus: "PERMISSION_DENIED",
                            message: "Permission 'cloudmessaging.messages.create' denied on project \(project)")
        }
        guard case .object(let root)? = try? JSONValue(parsing: String(buffer: body)),
              case .object(let message)? = root["message"] else {
            throw Rejection.invalid("message", "Invalid JSON payload received. The body must be {\"message\": {...}}.")
        }
        let targets = ["token", "topic", "condition"].filter { message[$0] != nil }
        var token = "", topic: String?
        switch targets {
        case ["topic"]:
            // A topic message (the relay's broadcast channels): `name` or `/topics/name`, FCM's topic characters.
            let name = message["topic"]?.stringValue.map { $0.hasPrefix("/topics/") ? String($0.dropFirst(8)) : $0 }
            guard let name, !name.isEmpty, name.count <= 900,
                  name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.~%".contains($0)) }) else {
                throw Rejection.invalid("message.topic", "Invalid topic name")
            }
            topic = name
        case ["token"]:
            guard case .string(let given)? = message["token"], !given.isEmpty else {
                throw Rejection.invalid("message.token", "The registration token is not a valid FCM registration token")
            }
            token = given
        default:
            throw Rejection.invalid("message", "Exactly one of token, topic or condition must be given")
        }
        let data = try Self.data(of: message)
        if let notification = message["notification"] {
            let strings = notification.objectValue?.values.allSatisfy { if case .string = $0 { true } else { false } }
            guard strings == true else {
                throw Rejection.invalid("message.notification", "notification must be a map of strings")
            }
        }
        if let android = message["android"] { try Self.checkAndroid(android) }
        try injectedFault(for: topic.map { "/topics/\($0)" } ?? token, faults: faults)
        return RecordedMessage(
            sequence: 0, name: "", token: token, data: data, notification: message["notification"],
            android: message["android"], accessTokenIssuedAt: Int64(access.issuedAt),
            receivedAt: Date().timeIntervalSince1970, topic: topic)
    }

    /// The access token of `Authorization: Bearer`, issued by this simulator, not expired and not revoked.
    private func authenticate(_ request: Request, faults: FCMSimulatorFaults) throws -> AccessToken {
        let unauthenticated = Rejection(
            status: 401, googleStatus: "UNAUTHENTICATED",
            message: "Request had invalid authentication credentials. Expected OAuth 2 access token.")
        guard let authorization = request.headers[.authorization], authorization.lowercased().hasPrefix("bearer ")
        else { throw unauthenticated }
        let bearer = String(authorization.dropFirst("bearer ".count))
        guard let access = state.withLock({ $0.accessTokens[bearer] }), access.expiresAt > Date().timeIntervalSince1970,
              access.issuedAt >= faults.revokeAccessTokensIssuedBefore ?? 0 else { throw unauthenticated }
        return access
    }

    /// `message.data`: string values, no reserved keys, at most 4096 bytes of keys and values.
    private static func data(of message: [String: JSONValue]) throws -> [String: String] {
        var data: [String: String] = [:]
        if let value = message["data"] {
            guard case .object(let fields) = value else {
                throw Rejection.invalid("message.data", "data must be a map")
            }
            for (key, value) in fields {
                guard case .string(let text) = value else {
                    let field = "message.data[\(key)]"
                    throw Rejection.invalid(field, "Invalid value at '\(field)': not a string")
                }
                let lower = key.lowercased()
                if ["from", "notification", "message_type"].contains(lower) || lower.hasPrefix("google.")
                    || lower.hasPrefix("gcm.") {
                    throw Rejection.invalid("message.data", "Invalid data payload key: \(key)")
                }
                data[key] = text
            }
        }
        let size = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= FCMPayload.maximumDataSize else {
            throw Rejection(status: 400, googleStatus: "INVALID_ARGUMENT",
                            message: "Android message is too big: data is \(size) bytes, the limit is 4096",
                            details: [Rejection.fcmError("INVALID_ARGUMENT")])
        }
        return data
    }

    /// `message.android`: priority NORMAL or HIGH, a ttl like "3600s", a string collapse_key.
    private static func checkAndroid(_ android: JSONValue) throws {
        guard case .object(let options) = android else {
            throw Rejection.invalid("message.android", "android must be a map")
        }
        if let priority = options["priority"] {
            guard case .string(let text) = priority, ["normal", "high"].contains(text.lowercased()) else {
                throw Rejection.invalid("message.android.priority", "priority must be NORMAL or HIGH")
            }
        }
        if let ttl = options["ttl"] {
            guard case .string(let text) = ttl, text.wholeMatch(of: /[0-9]{1,10}(\.[0-9]{1,9})?s/) != nil else {
                throw Rejection.invalid(
                    "message.android.ttl", "Invalid value at 'message.android.ttl': a duration like \"3600s\"")
            }
        }
        if let key = options["collapse_key"], case .string = key {} else if options["collapse_key"] != nil {
            throw Rejection.invalid("message.android.collapse_key", "collapse_key must be a string")
        }
    }

    /// The token's injected error, else a roll of the 503/429 rates.
    private func injectedFault(for token: String, faults: FCMSimulatorFaults) throws {
        if let code = faults.tokenErrors[token] {
            let (status, googleStatus) = FCMSimulatorFaults.status(for: code)
            var rejection = Rejection(
                status: status, googleStatus: googleStatus, message: "fault injected for this token: \(code)",
                details: [Rejection.fcmError(code)])
            if code == "INVALID_ARGUMENT" {
                rejection = .invalid("message.token", "The registration token is not a valid FCM registration token")
            } else if code.hasPrefix("INVALID_ARGUMENT:") {
                let field = String(code.dropFirst("INVALID_ARGUMENT:".count))
                rejection = .invalid(field, "Invalid value at '\(field)' (fault injected)")
            }
            if status == 429 || status >= 500 { rejection.retryAfter = faults.retryAfterSeconds }
            throw rejection
        }
        let roll = Double.random(in: 0..<1)
        if roll < faults.rate503 {
            throw Rejection(status: 503, googleStatus: "UNAVAILABLE", message: "The service is currently unavailable.",
                            details: [Rejection.fcmError("UNAVAILABLE")], retryAfter: faults.retryAfterSeconds)
        }
        if roll < faults.rate503 + faults.rate429 {
            throw Rejection(status: 429, googleStatus: "RESOURCE_EXHAUSTED", message: "Quota exceeded for this device.",
                            details: [Rejection.fcmError("QUOTA_EXCEEDED")], retryAfter: faults.retryAfterSeconds ?? 1)
        }
    }
}
