import Foundation
import LiveRelayCore

/// Faults the FCM simulator injects, set by flags at start or by `POST /sim/faults` at run time.
public struct FCMSimulatorFaults: Sendable, Codable, Equatable {
    /// Tokens answered with an FCM error code: `UNREGISTERED` (404), `SENDER_ID_MISMATCH` (403), `INVALID_ARGUMENT`
    /// (400 naming `message.token`), `INVALID_ARGUMENT:<field>` (400 naming another field), `QUOTA_EXCEEDED` (429),
    /// `UNAVAILABLE` (503), `INTERNAL` (500).
    public var tokenErrors: [String: String] = [:]
    /// Share of requests answered 503 `UNAVAILABLE`.
    public var rate503: Double = 0
    /// Share of requests answered 429 `QUOTA_EXCEEDED`.
    public var rate429: Double = 0
    /// The `Retry-After` seconds sent with 429/503.
    public var retryAfterSeconds: Int?
    /// Extra time before answering, milliseconds.
    public var delayMilliseconds: Int = 0
    /// Share of requests that close their connection at once, unanswered (the message is not accepted).
    public var resetRate: Double = 0
    /// Access tokens issued before this time (epoch seconds, fractional) are answered 401 (as if revoked).
    public var revokeAccessTokensIssuedBefore: Double?
    /// `expires_in` of the access tokens the token endpoint issues.
    public var accessTokenLifetimeSeconds: Int = 3600

    public init() {}

    /// Every field may be left out of `POST /sim/faults`; what is left out is off.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tokenErrors = try container.decodeIfPresent([String: String].self, forKey: .tokenErrors) ?? [:]
        rate503 = try container.decodeIfPresent(Double.self, forKey: .rate503) ?? 0
        rate429 = try container.decodeIfPresent(Double.self, forKey: .rate429) ?? 0
        retryAfterSeconds = try container.decodeIfPresent(Int.self, forKey: .retryAfterSeconds)
        delayMilliseconds = try container.decodeIfPresent(Int.self, forKey: .delayMilliseconds) ?? 0
        resetRate = try container.decodeIfPresent(Double.self, forKey: .resetRate) ?? 0
        revokeAccessTokensIssuedBefore = try container.decodeIfPresent(
            Double.self, forKey: .revokeAccessTokensIssuedBefore)
        accessTokenLifetimeSeconds = try container.decodeIfPresent(
            Int.self, forKey: .accessTokenLifetimeSeconds) ?? 3600
    }

    /// The HTTP status and Google status of an FCM error code.
    static func status(for code: String) -> (Int, String) {
        switch code {
        case "UNREGISTERED": return (404, "NOT_FOUND")
        case "SENDER_ID_MISMATCH": return (403, "PERMISSION_DENIED")
        case "QUOTA_EXCEEDED": return (429, "RESOURCE_EXHAUSTED")
        case "UNAVAILABLE": return (503, "UNAVAILABLE")
        case "INTERNAL": return (500, "INTERNAL")
        case "THIRD_PARTY_AUTH_ERROR": return (401, "UNAUTHENTICATED")
        default: return (400, "INVALID_ARGUMENT")
        }
    }
}

/// One message the simulator accepted.
public struct RecordedMessage: Sendable, Codable, Equatable {
    public var sequence: Int
    public var name: String
    public var token: String
    public var data: [String: String]
    public var notification: JSONValue?
    public var android: JSONValue?
    /// When the access token it was sent with was issued, epoch seconds.
    public var accessTokenIssuedAt: Int64
    /// When it arrived, epoch seconds with microseconds.
    public var receivedAt: Double
    /// The topic of a topic message (then `token` is empty).
    public var topic: String? = nil
}
