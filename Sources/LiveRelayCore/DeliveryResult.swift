/// What came of one delivery, in the transport-neutral terms the worker records.
public enum DeliveryOutcome: Sendable, Hashable {
    /// The push service accepted it.
    case delivered
    /// Transient (throttled, unavailable, no answer): try again, not before `afterSeconds` when the service said so.
    case retry(afterSeconds: Double?)
    /// The token is dead: never use it again (activity `invalidated`, device row deleted; a channel Apple no longer
    /// knows is `failed`).
    case deadToken
    /// Permanent for this message (too large, malformed, refused): record the failure, keep the token. For a
    /// channel's step Apple refused, the channel is `failed`.
    case rejected
    /// The relay's credentials were refused even after minting new ones: retried with backoff (the message is
    /// fine; the operator has to fix the credentials).
    case credentialsRejected
}

/// One delivery's outcome with what the push service said, for `delivery_log`, metrics and logs.
public struct DeliveryResult: Sendable, Hashable {
    public var outcome: DeliveryOutcome
    /// The HTTP status of the final answer, when there was one.
    public var providerStatus: Int?
    /// The service's reason or error code (`BadDeviceToken`, `UNREGISTERED`, …).
    public var providerReason: String?
    /// Why no answer came (connection error, deadline), or why the request could not be made.
    public var error: String?
    /// `push_type` in the log: `liveactivity` or `alert` for APNs, `data` or `notification` for FCM.
    public var pushType: PushKind?
    /// The APNs environment that gave the final answer (APNs only).
    public var environment: APNsEnvironment?
    /// The `apns-channel-id` Apple gave a channel it created.
    public var apnsChannelID: String?

    public init(outcome: DeliveryOutcome, providerStatus: Int? = nil, providerReason: String? = nil,
                error: String? = nil, pushType: PushKind?, environment: APNsEnvironment? = nil) {
        self.outcome = outcome
        self.providerStatus = providerStatus
        self.providerReason = providerReason
        self.error = error
        self.pushType = pushType
        self.environment = environment
    }
}

/// A push service the delivery workers send through. Implementations map a `Delivery` to their wire format, apply the
/// service's own rules (credential refresh, environment fallback) and classify every answer into a `DeliveryOutcome`.
public protocol DeliveryTransport: Sendable {
    var kind: TransportKind { get }
    /// Sends all deliveries at once and returns their results in the same order. Never throws: a delivery that could
    /// not be attempted comes back as `.retry` with an `error`.
    func deliver(_ deliveries: [Delivery]) async -> [DeliveryResult]
    /// Closes connections.
    func shutdown() async
}

/// What kind of message a delivery was, as `delivery_log.push_type` records it: APNs' `apns-push-type`
/// (`liveactivity`, `alert`), or an FCM message with or without a `notification` block (`data`, `notification`).
public enum PushKind: String, Sendable, Hashable, CaseIterable {
    case liveactivity, alert, data, notification, widgets
}
