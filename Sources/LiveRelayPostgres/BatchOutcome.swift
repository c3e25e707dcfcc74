import Foundation
import LiveRelayCore

/// Everything one batch decided, written in the batch's transaction.
public struct BatchOutcome: Sendable {
    public struct Retry: Sendable {
        public var rowID: Int64
        public var delaySeconds: Double
        public var error: String
        public init(rowID: Int64, delaySeconds: Double, error: String) {
            self.rowID = rowID
            self.delaySeconds = delaySeconds
            self.error = error
        }
    }
    public struct SentState: Sendable {
        public var activityID: UUID
        public var timestamp: Int64
        public var stateHash: String
        /// Sent at priority 10 (counts against the activity's update budget).
        public var priority10: Bool
        public init(activityID: UUID, timestamp: Int64, stateHash: String, priority10: Bool) {
            self.priority10 = priority10
            self.activityID = activityID
            self.timestamp = timestamp
            self.stateHash = stateHash
        }
    }
    public struct EnvironmentChange: Sendable {
        public var token: String
        public var environment: APNsEnvironment
        public init(token: String, environment: APNsEnvironment) {
            self.token = token
            self.environment = environment
        }
    }

    public var logs: [DeliveryLogEntry] = []
    public var finishedRowIDs: [Int64] = []
    public var retries: [Retry] = []
    public var sentStates: [SentState] = []
    /// Activity tokens found dead, with the answer that said so (the `invalidated` event carries it).
    public var deadActivityTokens: [DeadActivityToken] = []
    public var deadDeviceTokens: [String] = []
    public var deadStartTokens: [String] = []
    public var environmentChanges: [EnvironmentChange] = []
    /// Channels Apple created (with their `apns-channel-id`), channels Apple refused for good, and what each
    /// channel's side sent.
    public var createdChannels: [CreatedChannel] = []
    public var failedChannels: [FailedChannel] = []
    public var channelSentStates: [ChannelSent] = []
    /// Widget tokens reloaded (their window starts) and widget tokens APNs declared dead (set to NULL).
    public var widgetReloads: [String] = []
    public var deadWidgetTokens: [String] = []
    /// Widget rows put off to the end of their token's window.
    public var deferredWidgetRows: [Deferral] = []

    public struct Deferral: Sendable, Equatable {
        public var rowID: Int64
        public var delaySeconds: Double
        public init(rowID: Int64, delaySeconds: Double) {
            self.rowID = rowID
            self.delaySeconds = delaySeconds
        }
    }

    /// The batch has something for `liverelay_record_widgets`.
    public var hasWidgetOutcomes: Bool {
        !widgetReloads.isEmpty || !deadWidgetTokens.isEmpty || !deferredWidgetRows.isEmpty
    }

    public struct CreatedChannel: Sendable, Equatable {
        public var channelID: UUID
        public var apnsChannelID: String
        /// Where it was created (to delete it there should its row be gone meanwhile).
        public var bundleID: String
        public var environment: APNsEnvironment
        public init(channelID: UUID, apnsChannelID: String, bundleID: String, environment: APNsEnvironment) {
            self.channelID = channelID
            self.apnsChannelID = apnsChannelID
            self.bundleID = bundleID
            self.environment = environment
        }
    }
    public struct FailedChannel: Sendable, Equatable {
        public var channelID: UUID
        public var error: String
        public init(channelID: UUID, error: String) {
            self.channelID = channelID
            self.error = error
        }
    }
    public struct ChannelSent: Sendable, Equatable {
        public var chain: ChannelChain
        public var timestamp: Int64
        public var stateHash: String
        public init(chain: ChannelChain, timestamp: Int64, stateHash: String) {
            self.chain = chain
            self.timestamp = timestamp
            self.stateHash = stateHash
        }
    }

    /// True when the batch has channel rows to log or channel state to write.
    public var hasChannelOutcomes: Bool {
        logs.contains { $0.channel != nil } || !createdChannels.isEmpty || !failedChannels.isEmpty
            || !channelSentStates.isEmpty
    }

    /// True when the batch found any token dead.
    public var learntDeadTokens: Bool {
        !deadActivityTokens.isEmpty || !deadDeviceTokens.isEmpty || !deadStartTokens.isEmpty
    }

    public init() {}
}

/// An activity token the push service declared dead, and its answer.
public struct DeadActivityToken: Sendable {
    public var activityID: UUID
    public var token: String
    public var transport: TransportKind
    public var reason: String
    public var latencyMilliseconds: Double?

    public init(activityID: UUID, token: String, transport: TransportKind, reason: String,
                latencyMilliseconds: Double?) {
        self.activityID = activityID
        self.token = token
        self.transport = transport
        self.reason = reason
        self.latencyMilliseconds = latencyMilliseconds
    }
}

/// One `delivery_log` row.
public struct DeliveryLogEntry: Sendable {
    public var secretHash: String?
    public var eventType: String
    public var sessionID: String?
    public var status: DeliveryStatus
    public var error: String?
    public var outboxID: Int64
    public var activityID: UUID?
    /// The push service that answered (nil for rows settled without a request).
    public var transport: TransportKind?
    public var pushType: PushKind?
    public var environment: APNsEnvironment?
    public var tokenSuffix: String?
    public var apnsID: UUID
    public var providerStatus: Int?
    public var providerReason: String?
    public var attempt: Int
    public var latencyMilliseconds: Double?
    public var requestID: UUID?
    /// The priority the push went at, and why (pushes only).
    public var priority: Int?
    public var priorityReason: PriorityReason?
    /// The lifecycle event this outcome emits, in the same transaction.
    public var lifecycle: LifecycleEvent?
    /// The broadcast channel of a channel row (its name, and the side: `ios` Apple's, `android` the FCM topic).
    public var channel: String?
    public var channelSide: Platform?

    public init(row: OutboxRow, status: DeliveryStatus, error: String?, transport: TransportKind?, pushType: PushKind?,
                environment: APNsEnvironment?, token: String?, providerStatus: Int?, providerReason: String?,
                latencyMilliseconds: Double?) {
        self.secretHash = row.secretHash
        self.eventType = row.event.text
        self.sessionID = row.sessionID
        self.status = status
        self.error = error
        self.outboxID = row.id
        self.activityID = row.activityID
        self.transport = transport
        self.pushType = pushType
        self.environment = transport == .apns ? environment : nil
        self.tokenSuffix = token.map { String($0.suffix(8)) }
        self.apnsID = row.apnsID
        self.providerStatus = providerStatus
        self.providerReason = providerReason
        self.attempt = row.attempts + 1
        self.latencyMilliseconds = latencyMilliseconds
        self.requestID = row.requestID
    }
}
