import Foundation
import LiveRelayCore
import PostgresNIO

/// What a device's widget shows: its message and its active activities with their own content-state
/// (`GET /v1/devices/{uuid}/widget`, read by the widget extension's timeline provider after a reload push).
public struct DeviceWidget: Codable, Sendable, Equatable {
    public struct Activity: Codable, Sendable, Equatable {
        public var session_id: String
        public var status: ActivityStatus
        public var content_state: JSONValue?
    }

    public var device_uuid: String
    /// Null when the device has no message.
    public var message: String?
    public var activities: [Activity]

    enum CodingKeys: String, CodingKey {
        case device_uuid, message, activities
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(device_uuid, forKey: .device_uuid)
        try container.encode(message, forKey: .message)
        try container.encode(activities, forKey: .activities)
    }
}

extension RelayStore {
    /// The widget's view of a known device (`deviceUUID(_:)` says unknown with `StoreError.notFound`).
    public func widget(of device: UUID) async throws -> DeviceWidget {
        let uuid = try await deviceUUID(.uuid(device))
        let text = try await values("""
            SELECT json_build_object(
                'device_uuid', \(uuid),
                'message', (SELECT message FROM device_live_activity_message WHERE device_uuid = \(uuid)),
                'activities', coalesce((
                    SELECT json_agg(json_build_object('session_id', session_id, 'status', status,
                                                      'content_state', content_state) ORDER BY created_at, id)
                    FROM activity_registration WHERE device_uuid = \(uuid) AND status = 'active'), '[]'::json))::text
            """, as: String.self).first ?? "{}"
        return try Self.decode(DeviceWidget.self, from: text)
    }
}
