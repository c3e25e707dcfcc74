import LiveRelayCore

/// One row of `broadcast_channel` as the API, the dashboard and the tools show it, with its last send per side.
public struct BroadcastChannelRecord: Codable, Sendable, Equatable {
    public var name: String
    public var status: ChannelStatus
    /// Apple's id for the channel (what an app subscribes with); nil until Apple created it.
    public var apnsChannelId: String?
    public var fcmTopic: String
    public var contentState: JSONValue?
    public var bundleId: String
    public var apnsEnv: APNsEnvironment
    public var storagePolicy: Int
    public var attributesType: String?
    public var priority: Int
    public var staleDate: String?
    public var dismissalDate: String?
    public var error: String?
    /// The sides a write reaches: `ios` (Apple's broadcast) and, when the relay sends FCM, `android` (the topic).
    public var platforms: [Platform]
    public var createdAt: String
    public var updatedAt: String
    /// The newest outcome in `delivery_log` for this channel.
    public var lastSend: ChannelSend?

    /// Every key present, `null` when unset (as the API documents the channel).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(name, forKey: .name)
        try container.encode(status, forKey: .status)
        try container.encode(apnsChannelId, forKey: .apnsChannelId)
        try container.encode(fcmTopic, forKey: .fcmTopic)
        try container.encode(contentState, forKey: .contentState)
        try container.encode(bundleId, forKey: .bundleId)
        try container.encode(apnsEnv, forKey: .apnsEnv)
        try container.encode(storagePolicy, forKey: .storagePolicy)
        try container.encode(attributesType, forKey: .attributesType)
        try container.encode(priority, forKey: .priority)
        try container.encode(staleDate, forKey: .staleDate)
        try container.encode(dismissalDate, forKey: .dismissalDate)
        try container.encode(error, forKey: .error)
        try container.encode(platforms, forKey: .platforms)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
        try container.encode(lastSend, forKey: .lastSend)
    }
}

/// A channel's newest delivery outcome.
public struct ChannelSend: Codable, Sendable, Equatable {
    public var eventType: String
    public var status: DeliveryStatus
    public var transport: String?
    public var at: String
    public var latencyMs: Double?
    public var reason: String?
}

/// A channel to create (`POST /v1/channels`; the database fills what is left out).
public struct NewChannel: Sendable {
    public var name: String
    public var bundleID: String?
    public var environment: APNsEnvironment?
    public var storagePolicy: Int?
    public var attributesType: String?
    public var contentState: JSONValue?
    public var priority: Int?

    public init(name: String, bundleID: String? = nil, environment: APNsEnvironment? = nil, storagePolicy: Int? = nil,
                attributesType: String? = nil, contentState: JSONValue? = nil, priority: Int? = nil) {
        self.name = name
        self.bundleID = bundleID
        self.environment = environment
        self.storagePolicy = storagePolicy
        self.attributesType = attributesType
        self.contentState = contentState
        self.priority = priority
    }
}

/// What `PATCH /v1/channels/{name}` and the `update_channel` tool change (nil: unchanged).
public struct ChannelChange: Sendable {
    public var contentState: JSONValue?
    public var status: ChannelStatus?
    /// Epoch seconds.
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var priority: Int?

    public init(contentState: JSONValue? = nil, status: ChannelStatus? = nil, staleDate: Int64? = nil,
                dismissalDate: Int64? = nil, priority: Int? = nil) {
        self.contentState = contentState
        self.status = status
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.priority = priority
    }
}
