import LiveRelayCore

/// A device as people and agents see it: its uuid and name, its tokens (by their last characters), the message on
/// its Live Activities and how many of them are active. Built from every `device_registration` row of the uuid.
public struct Device: Codable, Sendable, Equatable {
    public var device_uuid: String
    public var device_name: String?
    /// Nil for a device that only has a message so far.
    public var platform: Platform?
    /// The last 8 characters of each registered token.
    public var token_suffixes: [String]
    /// Whether it holds a push-to-start token of any attributes type.
    public var has_push_to_start: Bool
    /// The attributes types it holds push-to-start tokens for, sorted.
    public var push_to_start_types: [String]
    public var message: String?
    public var message_updated_at: String?
    public var active_activities: Int
    public var updated_at: String
}

/// `device_live_activity_message`: the note shown on every Live Activity of a device.
public struct DeviceMessage: Codable, Sendable, Equatable {
    public var device_uuid: String
    public var message: String
    public var updated_at: String
    public var updated_by: String?
}

/// One row of `delivery_log`, newest first in listings.
public struct DeliveryRecord: Codable, Sendable, Equatable {
    public var id: Int64
    public var created_at: String
    public var status: DeliveryStatus
    public var event_type: String
    public var session_id: String?
    public var activity_id: String?
    /// The broadcast channel of a channel delivery.
    public var channel: String?
    public var transport: LoggedTransport?
    public var push_type: String?
    public var token_suffix: String?
    public var provider_status: Int?
    public var provider_reason: String?
    public var attempt: Int?
    public var latency_ms: Double?
    public var error: String?
    /// The priority a push went at, and why (`budget`: its activity's priority-10 budget was spent).
    public var priority: Int?
    public var priority_reason: PriorityReason?
    /// The lifecycle event a webhook delivery carried.
    public var event_id: String?
}
