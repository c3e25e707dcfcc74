import LiveRelayCore

/// What to do after APNs answered one push (Apple's status codes and reasons).
public enum DeliveryDecision: Sendable, Hashable {
    /// Accepted by APNs.
    case sent
    /// Transient (429, 5xx, connection errors): try again later.
    case retry(afterSeconds: Double?)
    /// `BadDeviceToken`/`BadEnvironmentKeyInToken`: the token may belong to the other environment.
    case tryOtherEnvironment
    /// The token is dead (410, or `DeviceTokenNotForTopic`): never use it again.
    case invalidateToken
    /// `ExpiredProviderToken`: mint a new provider token and try once more.
    case refreshProviderToken
    /// `InvalidProviderToken`, `MissingProviderToken`: Apple refused the relay's key itself (a wrong key id or team,
    /// a revoked key). The push is fine and waits with backoff for the operator to fix the key.
    case credentialsRefused
    /// Permanent for this payload (for example `PayloadTooLarge`): record the failure.
    case fail

    /// Classifies one APNs response.
    public static func classify(_ response: APNsResponse) -> DeliveryDecision {
        switch (response.status, response.reason ?? "") {
        case (200, _): return .sent
        case (410, _): return .invalidateToken
        case (400, "BadDeviceToken"), (403, "BadEnvironmentKeyInToken"), (400, "BadEnvironmentKeyInToken"):
            return .tryOtherEnvironment
        case (400, "DeviceTokenNotForTopic"): return .invalidateToken
        case (403, "ExpiredProviderToken"): return .refreshProviderToken
        case (403, "InvalidProviderToken"), (403, "MissingProviderToken"): return .credentialsRefused
        case (429, _), (500...599, _): return .retry(afterSeconds: response.retryAfterSeconds)
        default: return .fail
        }
    }
}
