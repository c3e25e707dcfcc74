import LiveRelayCore
import LiveRelayHTTP2Client

/// What FCM answered to one `messages:send`, read from Google's error JSON
/// (`{"error": {"code", "status", "message", "details": [{"errorCode"} | {"fieldViolations"}]}}`).
struct FCMAnswer: Sendable, Hashable {
    var status: Int
    /// Google's canonical status (`NOT_FOUND`, `INVALID_ARGUMENT`, …).
    var errorStatus: String?
    /// FCM's error code from `details[].errorCode` (`UNREGISTERED`, `SENDER_ID_MISMATCH`, `QUOTA_EXCEEDED`, …).
    var errorCode: String?
    /// Fields a `google.rpc.BadRequest` detail says are wrong (`message.token`, …).
    var fieldViolations: [String] = []
    var message: String?
    var retryAfterSeconds: Double?

    init(status: Int, body: String, retryAfterSeconds: Double? = nil) {
        self.status = status
        self.retryAfterSeconds = retryAfterSeconds
        guard !(200..<300).contains(status), case .object(let root)? = try? JSONValue(parsing: body),
              case .object(let error)? = root["error"] else { return }
        if case .string(let text)? = error["status"] { errorStatus = text }
        if case .string(let text)? = error["message"] { message = text }
        guard case .array(let details)? = error["details"] else { return }
        for case .object(let detail) in details {
            if errorCode == nil, case .string(let code)? = detail["errorCode"] { errorCode = code }
            if case .array(let violations)? = detail["fieldViolations"] {
                for case .object(let violation) in violations {
                    if case .string(let field)? = violation["field"] { fieldViolations.append(field) }
                }
            }
        }
    }

    init(_ response: HTTP2Response) {
        self.init(status: response.status, body: response.bodyText, retryAfterSeconds: response.retryAfterSeconds)
    }

    /// The reason recorded in `delivery_log`: the error code, else Google's status.
    var reason: String? { errorCode ?? errorStatus }

    /// The outcome classes of README "Android (FCM HTTP v1)". A 401 reaching this point was refused after a fresh
    /// access token.
    var outcome: DeliveryOutcome {
        switch status {
        case 200..<300:
            return .delivered
        // Only FCM's own code says the token is gone. A 404 without it (`NOT_FOUND` alone: a project or path that
        // does not exist, as Google's Admin SDKs read it too) is the relay's configuration, and must not cost every
        // Android device its registration.
        case 404 where errorCode == "UNREGISTERED":
            return .deadToken
        case 403 where errorCode == "SENDER_ID_MISMATCH":
            return .deadToken
        case 400 where fieldViolations.contains("message.token")
                || (errorCode == "INVALID_ARGUMENT" && message?.contains("registration token") == true):
            return .deadToken
        case 401:
            return .credentialsRejected
        case 429, 500...599:
            return .retry(afterSeconds: retryAfterSeconds)
        default:
            return .rejected
        }
    }
}
