import Foundation

/// `broadcast_channel.status`.
public enum ChannelStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case active, ended, deleted, failed
}

/// What a `channel` outbox row asks of one side of a channel (`event_type`; `delivery_log.event_type`).
public enum ChannelStep: String, Sendable, Hashable, CaseIterable, Codable {
    /// Apple's Channel Management API creates the channel (Apple's side only).
    case create
    /// A broadcast / topic message with the channel's latest state.
    case update
    /// The same with `event: end`.
    case end
    /// Apple deletes the channel (Apple's side only).
    case delete
}

/// A channel as read when its step is planned: the row, and what each side last sent.
public struct ChannelSnapshot: Sendable, Hashable {
    public var id: UUID
    public var name: String
    public var bundleID: String
    public var environment: APNsEnvironment
    /// 0: Apple stores no message for offline devices; 1: the most recent one.
    public var storagePolicy: Int
    public var status: ChannelStatus
    public var apnsChannelID: String?
    public var fcmTopic: String
    public var contentState: JSONValue?
    public var priority: Int
    public var staleDate: Int64?
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    /// Per side (`ios` is Apple's, `android` the FCM topic): the timestamp and state hash last sent.
    public var lastTimestamp: [Platform: Int64] = [:]
    public var lastPayloadHash: [Platform: String] = [:]

    public init(id: UUID, name: String, bundleID: String, environment: APNsEnvironment, storagePolicy: Int = 0,
                status: ChannelStatus = .active, apnsChannelID: String? = nil, fcmTopic: String? = nil,
                contentState: JSONValue? = nil, priority: Int = 10, staleDate: Int64? = nil,
                dismissalDate: Int64? = nil, relevanceScore: Double? = nil) {
        self.id = id
        self.name = name
        self.bundleID = bundleID
        self.environment = environment
        self.storagePolicy = storagePolicy
        self.status = status
        self.apnsChannelID = apnsChannelID
        self.fcmTopic = fcmTopic ?? "liverelay.\(name)"
        self.contentState = contentState
        self.priority = priority
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
    }

    /// The channel as a SQL `DELETE` left it in its rows' `payload` (`liverelay_channel_snapshot`), or as Apple's
    /// create left it when the row was gone (`apns_channel_id` only).
    public init?(deleted row: OutboxRow) {
        guard let channelID = row.channelID, let bundleID = row.bundleID,
              case .object(let snapshot)? = row.payload else { return nil }
        self.init(id: channelID, name: snapshot["name"]?.stringValue ?? "", bundleID: bundleID,
                  environment: row.environment ?? .production, status: .deleted, columns: snapshot)
    }

    /// The channel as the claim returns it (`channel_state` of `liverelay_claim_deliveries`), with what `platform`'s
    /// side last sent.
    public init?(claimed state: JSONValue, platform: Platform) {
        guard case .object(let row) = state, let id = row["id"]?.stringValue.flatMap(UUID.init(uuidString:)),
              let name = row["name"]?.stringValue, let bundleID = row["bundle_id"]?.stringValue else { return nil }
        self.init(id: id, name: name, bundleID: bundleID,
                  environment: row["apns_env"]?.stringValue.flatMap(APNsEnvironment.init(rawValue:)) ?? .production,
                  status: row["status"]?.stringValue.flatMap(ChannelStatus.init(rawValue:)) ?? .failed, columns: row)
        if case .integer(let value)? = row["last_timestamp"] { lastTimestamp[platform] = value }
        lastPayloadHash[platform] = row["last_payload"]?.stringValue
    }

    /// The rest of the channel from its columns as JSON (`broadcast_channel`'s names, dates in epoch seconds).
    private init(id: UUID, name: String, bundleID: String, environment: APNsEnvironment, status: ChannelStatus,
                 columns: [String: JSONValue]) {
        func integer(_ key: String) -> Int64? {
            if case .integer(let value)? = columns[key] { return value }
            return nil
        }
        let relevance: Double? = switch columns["relevance_score"] {
        case .number(let value)?: value
        case .integer(let value)?: Double(value)
        default: nil
        }
        self.init(
            id: id, name: name, bundleID: bundleID, environment: environment,
            storagePolicy: Int(integer("storage_policy") ?? 0), status: status,
            apnsChannelID: columns["apns_channel_id"]?.stringValue, fcmTopic: columns["fcm_topic"]?.stringValue,
            contentState: columns["content_state"].flatMap { $0 == .null ? nil : $0 },
            priority: Int(integer("priority") ?? 10), staleDate: integer("stale_date"),
            dismissalDate: integer("dismissal_date"), relevanceScore: relevance)
    }

    /// Adds what `other` knows of `platform`'s side (the claim returns one side per row).
    public mutating func merge(_ other: ChannelSnapshot, platform: Platform) {
        lastTimestamp[platform] = other.lastTimestamp[platform]
        lastPayloadHash[platform] = other.lastPayloadHash[platform]
    }
}

/// What a channel delivery says: the step, the channel's names at Apple and Google, and the state it carries.
public struct ChannelMessage: Sendable, Hashable {
    public var step: ChannelStep
    public var channelID: UUID
    public var name: String
    public var apnsChannelID: String?
    public var fcmTopic: String
    public var storagePolicy: Int
    /// The state of an update or end.
    public var content: LiveActivityContent?

    /// What an update or end carries (an empty update for a step that carries none).
    public var state: LiveActivityContent {
        content ?? LiveActivityContent(event: .update, contentState: .object([:]))
    }

    public init(step: ChannelStep, channelID: UUID, name: String, apnsChannelID: String?, fcmTopic: String,
                storagePolicy: Int, content: LiveActivityContent?) {
        self.step = step
        self.channelID = channelID
        self.name = name
        self.apnsChannelID = apnsChannelID
        self.fcmTopic = fcmTopic
        self.storagePolicy = storagePolicy
        self.content = content
    }
}
