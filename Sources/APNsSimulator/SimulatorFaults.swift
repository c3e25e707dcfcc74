import Foundation
import LiveRelayCore

/// Faults the simulator injects, set by flags at start or by `POST /sim/faults` at run time.
public struct SimulatorFaults: Sendable, Codable, Equatable {
    /// Tokens answered with an APNs reason: `Unregistered`/`ExpiredToken` (410), `BadDeviceToken`,
    /// `DeviceTokenNotForTopic` (400), or any other reason (400).
    public var tokenErrors: [String: String] = [:]
    /// Tokens that exist only in the sandbox: the production path answers 400 `BadDeviceToken`.
    public var sandboxTokens: [String] = []
    /// Share of requests answered 503 `ServiceUnavailable`.
    public var rate503: Double = 0
    /// Share of requests answered 429 `TooManyRequests` (with `retry-after`).
    public var rate429: Double = 0
    /// The `retry-after` seconds sent with 429/503.
    public var retryAfterSeconds: Int?
    /// Extra time before answering, milliseconds.
    public var delayMilliseconds: Int = 0
    /// Provider tokens issued before this epoch second are answered 403 `ExpiredProviderToken`.
    public var expireProviderTokensIssuedBefore: Int64?
    /// Share of requests that close their connection at once, unanswered (the push is not accepted).
    public var resetRate: Double = 0
    /// Share of requests that make the server send GOAWAY on their connection (the request itself is answered; the
    /// connection then drains and closes, as APNs does when it retires a connection).
    public var goAwayRate: Double = 0
    /// Broadcast channels (by `apns-channel-id`) whose broadcasts are answered with an APNs reason.
    public var channelErrors: [String: String] = [:]
    /// Share of Channel Management API requests answered 503 (1: the API is down).
    public var channelManagementRate503: Double = 0

    public init() {}

    /// Every field may be left out of `POST /sim/faults`; what is left out is off.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        tokenErrors = try container.decodeIfPresent([String: String].self, forKey: .tokenErrors) ?? [:]
        sandboxTokens = try container.decodeIfPresent([String].self, forKey: .sandboxTokens) ?? []
        rate503 = try container.decodeIfPresent(Double.self, forKey: .rate503) ?? 0
        rate429 = try container.decodeIfPresent(Double.self, forKey: .rate429) ?? 0
        retryAfterSeconds = try container.decodeIfPresent(Int.self, forKey: .retryAfterSeconds)
        delayMilliseconds = try container.decodeIfPresent(Int.self, forKey: .delayMilliseconds) ?? 0
        expireProviderTokensIssuedBefore = try container.decodeIfPresent(
            Int64.self, forKey: .expireProviderTokensIssuedBefore)
        resetRate = try container.decodeIfPresent(Double.self, forKey: .resetRate) ?? 0
        goAwayRate = try container.decodeIfPresent(Double.self, forKey: .goAwayRate) ?? 0
        channelErrors = try container.decodeIfPresent([String: String].self, forKey: .channelErrors) ?? [:]
        channelManagementRate503 = try container.decodeIfPresent(Double.self, forKey: .channelManagementRate503) ?? 0
    }

    /// The status for an APNs reason.
    static func status(for reason: String) -> Int {
        switch reason {
        case "Unregistered", "ExpiredToken": return 410
        case "TooManyRequests": return 429
        case "ServiceUnavailable", "Shutdown": return 503
        case "InternalServerError": return 500
        default: return 400
        }
    }
}

/// One push the simulator accepted.
public struct RecordedPush: Sendable, Codable, Equatable {
    public var sequence: Int
    public var token: String
    public var environment: String
    public var pushType: String?
    public var topic: String?
    public var priority: String?
    public var expiration: String?
    public var apnsID: String
    public var providerTokenIssuedAt: Int64
    /// When it arrived, epoch seconds with microseconds.
    public var receivedAt: Double
    public var payload: JSONValue
    /// The connection it came on: the sender's address and port.
    public var connection: String? = nil
}
