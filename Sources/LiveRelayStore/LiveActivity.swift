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
    public var apnsEnv: String
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
        case pushesLastHour
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
    }
}
