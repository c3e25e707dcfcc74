import Foundation

/// One message to deliver to one token, whatever the transport: what the planner decided, before any wire format.
public struct Delivery: Sendable, Hashable {
    /// What the message says.
    public enum Content: Sendable, Hashable {
        /// A Live Activity update or end, built from the activity's state when it is sent.
        case liveActivity(LiveActivityContent)
        /// A payload the writer prepared in the platform's own shape (an alert, a push-to-start), sent as it is.
        case prepared(JSONValue)
        /// A step of a broadcast channel: Apple's channel management or broadcast, or an FCM topic message.
        case channel(ChannelMessage)
    }

    public var platform: Platform
    public var kind: OutboxRow.Kind
    public var token: String
    public var content: Content
    /// 10 (now) or 5 (when power allows); FCM sends every Live Activity message at high priority.
    public var priority: Int
    /// Why `priority` is what it is.
    public var priorityReason: PriorityReason = .requested
    /// Epoch seconds after which the message is useless (`apns-expiration`, FCM's `ttl`).
    public var expiration: Int64
    /// The same across retries of one delivery (`apns-id`; FCM's idempotency is per message).
    public var id: UUID
    /// The app's bundle ID or package name.
    public var bundleID: String
    /// The APNs server a token belongs to (not used by other transports).
    public var environment: APNsEnvironment
    public var activityID: UUID?
    public var sessionID: String?
    /// Epoch seconds, never decreasing per activity (`aps.timestamp`, `liveRelayTimestamp`).
    public var timestamp: Int64

    public init(
        platform: Platform, kind: OutboxRow.Kind, token: String, content: Content, priority: Int, expiration: Int64,
        id: UUID, bundleID: String, environment: APNsEnvironment, activityID: UUID? = nil, sessionID: String? = nil,
        timestamp: Int64
    ) {
        self.platform = platform
        self.kind = kind
        self.token = token
        self.content = content
        self.priority = priority
        self.expiration = expiration
        self.id = id
        self.bundleID = bundleID
        self.environment = environment
        self.activityID = activityID
        self.sessionID = sessionID
        self.timestamp = timestamp
    }
}

/// The state a Live Activity message carries.
public struct LiveActivityContent: Sendable, Hashable {
    public var event: LiveActivityEvent
    /// The activity's content-state with the device's note merged in.
    public var contentState: JSONValue
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    /// An alert to show with this update (set by `PATCH /v1/live-activities/{id}`).
    public var alert: JSONValue?

    public init(event: LiveActivityEvent, contentState: JSONValue, staleDate: Int64? = nil, dismissalDate: Int64? = nil,
                relevanceScore: Double? = nil, alert: JSONValue? = nil) {
        self.event = event
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.alert = alert
    }
}
