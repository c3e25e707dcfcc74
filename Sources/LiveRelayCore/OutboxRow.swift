import Foundation

/// One claimed `delivery_outbox` row.
public struct OutboxRow: Sendable, Hashable {
    /// `activity` (payload built from the activity's state at send time), `alert` or `start` (payload in the row),
    /// `channel` (a step of a broadcast channel, built from the channel's state at send time), `widget` (reload the
    /// widgets of the token the row carries).
    public enum Kind: String, Sendable { case activity, alert, start, channel, widget }

    public var id: Int64
    public var kind: Kind
    /// The platform of the token an `alert`/`start` row carries (activity rows take it from the activity).
    public var platform: Platform
    public var activityID: UUID?
    /// The broadcast channel of a `channel` row (and of a `start` that follows a channel).
    public var channelID: UUID?
    public var event: OutboxEvent
    public var secretHash: String?
    public var sessionID: String?
    public var deviceToken: String?
    public var bundleID: String?
    public var environment: APNsEnvironment?
    public var payload: JSONValue?
    public var priority: Int?
    public var apnsID: UUID
    public var requestID: UUID?
    /// When the row was written, epoch seconds.
    public var enqueuedAt: Double
    public var attempts: Int

    public init(
        id: Int64, kind: Kind, platform: Platform = .ios, activityID: UUID? = nil, event: OutboxEvent,
        secretHash: String? = nil, sessionID: String? = nil, deviceToken: String? = nil, bundleID: String? = nil,
        environment: APNsEnvironment? = nil, payload: JSONValue? = nil,
        priority: Int? = nil, apnsID: UUID = UUID(), requestID: UUID? = nil, enqueuedAt: Double, attempts: Int = 0,
        channelID: UUID? = nil
    ) {
        self.channelID = channelID
        self.id = id
        self.kind = kind
        self.platform = platform
        self.activityID = activityID
        self.event = event
        self.secretHash = secretHash
        self.sessionID = sessionID
        self.deviceToken = deviceToken
        self.bundleID = bundleID
        self.environment = environment
        self.payload = payload
        self.priority = priority
        self.apnsID = apnsID
        self.requestID = requestID
        self.enqueuedAt = enqueuedAt
        self.attempts = attempts
    }
}

/// An activity's state as read when its push is built.
public struct ActivitySnapshot: Sendable, Hashable {
    public var id: UUID
    /// Nil while the activity waits for its update token (created by a push-to-start, or without one).
    public var activityToken: String?
    public var bundleID: String
    public var environment: APNsEnvironment
    public var status: ActivityStatus
    public var platform: Platform
    public var contentState: JSONValue?
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    public var priority: Int
    /// The device's message, when the device has a `device_live_activity_message` row.
    public var message: String?
    public var lastTimestamp: Int64?
    public var lastPayloadHash: String?
    /// `frequent_updates`: the app declares `NSSupportsLiveActivitiesFrequentUpdates` (double budget).
    public var frequentUpdates: Bool
    /// Priority-10 pushes the push service accepted for this activity in the last hour.
    public var priority10LastHour: Int
    /// Its app is open on some relay's stream (see `ForegroundPolicy`).
    public var foreground: Bool

    public init(
        id: UUID, activityToken: String?, bundleID: String, environment: APNsEnvironment, status: ActivityStatus,
        platform: Platform = .ios,
        contentState: JSONValue?, staleDate: Int64? = nil, dismissalDate: Int64? = nil, relevanceScore: Double? = nil,
        priority: Int = 10, message: String? = nil, lastTimestamp: Int64? = nil, lastPayloadHash: String? = nil,
        frequentUpdates: Bool = false, priority10LastHour: Int = 0, foreground: Bool = false
    ) {
        self.foreground = foreground
        self.frequentUpdates = frequentUpdates
        self.priority10LastHour = priority10LastHour
        self.id = id
        self.activityToken = activityToken
        self.bundleID = bundleID
        self.environment = environment
        self.status = status
        self.platform = platform
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.message = message
        self.lastTimestamp = lastTimestamp
        self.lastPayloadHash = lastPayloadHash
    }
}
