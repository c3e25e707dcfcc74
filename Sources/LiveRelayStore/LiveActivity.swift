import LiveRelayCore

/// One row of `activity_registration` as the API, the dashboard and the tools show it (never the whole token).
/// Encoded with every key present (`null` when unset), as the HTTP API has always answered.
public struct LiveActivity: Codable, Sendable, Equatable {
    public var id: String
    public var sessionId: String
    public var platform: Platform
    public var status: ActivityStatus
    public var activityType: String?
    public var attributes: JSONValue?
    public var contentState: JSONValue?
    public var externalId: String?
    public var userId: String?
    public var deviceUUID: String?
    public var bundleId: String
    public var apnsEnv: APNsEnvironment
    public var tokenSuffix: String?
    public var staleDate: String?
    public var dismissalDate: String?
    public var priority: Int?
    public var createdAt: String
    public var updatedAt: String
    /// The newest outcome in `delivery_log` for this activity.
    public var lastDelivery: DeliverySummary?
    /// Pushes sent to this activity in the last hour.
    public var pushesLastHour: Int
    /// When it last became active (the age limit counts from here).
    public var startedAt: String
    public var frequentUpdates: Bool
    /// True while it waits for its update token (its state is kept and sent when the token comes).
    public var awaitingToken: Bool
    /// Priority-10 pushes accepted in the last hour, and how many the update budget allows.
    public var priority10LastHour: Int
    public var priority10Limit: Int
    /// The app shows it itself: a stream of its device (device token) or session (pairing secret) is open on a relay
    /// of the cluster, so its updates go at priority 5 or not at all (`LIVERELAY_FOREGROUND_PUSH`).
    public var foreground: Bool

    /// `ok`, `warning` (`UpdateBudget.warningAt` or more priority-10 pushes in the last hour) or `downgraded`
    /// (updates go at priority 5).
    public var budgetState: BudgetState {
        if priority10LastHour >= priority10Limit { return .downgraded }
        return priority10LastHour >= UpdateBudget.warningAt ? .warning : .ok
    }

    public enum BudgetState: String, Codable, Sendable {
        case ok, warning, downgraded
    }

    /// The last outcome of an activity's deliveries.
    public struct DeliverySummary: Codable, Sendable, Equatable {
        public var status: DeliveryStatus
        public var eventType: String
        public var at: String
        public var latencyMs: Double?
        public var reason: String?
    }

    enum CodingKeys: String, CodingKey {
        case id, sessionId, platform, status, activityType, attributes, contentState, externalId, userId, deviceUUID
        case bundleId, apnsEnv, tokenSuffix, staleDate, dismissalDate, priority, createdAt, updatedAt, lastDelivery
        case pushesLastHour, startedAt, frequentUpdates, awaitingToken, priority10LastHour, priority10Limit
        case budgetState, foreground
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        sessionId = try container.decode(String.self, forKey: .sessionId)
        platform = try container.decode(Platform.self, forKey: .platform)
        status = try container.decode(ActivityStatus.self, forKey: .status)
        activityType = try container.decodeIfPresent(String.self, forKey: .activityType)
        attributes = try container.decodeIfPresent(JSONValue.self, forKey: .attributes)
        contentState = try container.decodeIfPresent(JSONValue.self, forKey: .contentState)
        externalId = try container.decodeIfPresent(String.self, forKey: .externalId)
        userId = try container.decodeIfPresent(String.self, forKey: .userId)
        deviceUUID = try container.decodeIfPresent(String.self, forKey: .deviceUUID)
        bundleId = try container.decode(String.self, forKey: .bundleId)
        apnsEnv = try container.decode(APNsEnvironment.self, forKey: .apnsEnv)
        tokenSuffix = try container.decodeIfPresent(String.self, forKey: .tokenSuffix)
        staleDate = try container.decodeIfPresent(String.self, forKey: .staleDate)
        dismissalDate = try container.decodeIfPresent(String.self, forKey: .dismissalDate)
        priority = try container.decodeIfPresent(Int.self, forKey: .priority)
        createdAt = try container.decode(String.self, forKey: .createdAt)
        updatedAt = try container.decode(String.self, forKey: .updatedAt)
        lastDelivery = try container.decodeIfPresent(DeliverySummary.self, forKey: .lastDelivery)
        pushesLastHour = try container.decode(Int.self, forKey: .pushesLastHour)
        startedAt = try container.decode(String.self, forKey: .startedAt)
        frequentUpdates = try container.decode(Bool.self, forKey: .frequentUpdates)
        awaitingToken = try container.decode(Bool.self, forKey: .awaitingToken)
        priority10LastHour = try container.decode(Int.self, forKey: .priority10LastHour)
        priority10Limit = try container.decode(Int.self, forKey: .priority10Limit)
        foreground = try container.decodeIfPresent(Bool.self, forKey: .foreground) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(sessionId, forKey: .sessionId)
        try container.encode(platform, forKey: .platform)
        try container.encode(status, forKey: .status)
        try container.encode(activityType, forKey: .activityType)
        try container.encode(attributes, forKey: .attributes)
        try container.encode(contentState, forKey: .contentState)
        try container.encode(externalId, forKey: .externalId)
        try container.encode(userId, forKey: .userId)
        try container.encode(deviceUUID, forKey: .deviceUUID)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(apnsEnv, forKey: .apnsEnv)
        try container.encode(tokenSuffix, forKey: .tokenSuffix)
        try container.encode(staleDate, forKey: .staleDate)
        try container.encode(dismissalDate, forKey: .dismissalDate)
        try container.encode(priority, forKey: .priority)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(lastDelivery, forKey: .lastDelivery)
        try container.encode(pushesLastHour, forKey: .pushesLastHour)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(frequentUpdates, forKey: .frequentUpdates)
        try container.encode(awaitingToken, forKey: .awaitingToken)
        try container.encode(priority10LastHour, forKey: .priority10LastHour)
        try container.encode(priority10Limit, forKey: .priority10Limit)
        try container.encode(budgetState, forKey: .budgetState)
        try container.encode(foreground, forKey: .foreground)
    }
}
