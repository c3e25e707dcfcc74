import Foundation
import LiveRelayCore
import PostgresNIO

/// One message to write: the device, the text (`""` clears it) and who wrote it.
public struct DeviceMessageWrite: Sendable, Equatable {
    public var device: UUID
    public var message: String
    public var updatedBy: String

    public init(device: UUID, message: String, updatedBy: String) {
        self.device = device
        self.message = message
        self.updatedBy = updatedBy
    }
}

extension RelayStore {
    /// One message row (`m`) as JSON.
    static let messageJSON = """
        json_build_object('device_uuid', m.device_uuid, 'message', m.message, 'updated_at', m.updated_at,
                          'updated_by', m.updated_by)::text
        """

    /// The longest message accepted, in characters (the trigger also refuses one that would make a push too large).
    public static let maximumMessageLength = 4096

    /// Why a message is refused before it reaches the database, in a sentence; nil when its length is acceptable.
    public static func messageLengthRefusal(_ message: String) -> String? {
        message.unicodeScalars.count <= maximumMessageLength ? nil
            : "message is longer than \(maximumMessageLength) characters"
    }

    /// Upserts (`merge`) or inserts the messages in one statement: the triggers push them to every active activity of
    /// each device. A message too large for a push is refused by the database and nothing is written.
    public func setMessages(_ writes: [DeviceMessageWrite], merge: Bool = true) async throws {
        guard !writes.isEmpty, writes.count <= 1000 else {
            throw StoreError.invalidArgument("write 1 to 1000 messages at a time")
        }
        for write in writes {
            if let refusal = Self.messageLengthRefusal(write.message) { throw StoreError.invalidArgument(refusal) }
        }
        if let refusal = Self.repeatedDeviceRefusal(writes) { throw StoreError.invalidArgument(refusal) }
        let devices = writes.map(\.device), messages = writes.map(\.message), authors = writes.map(\.updatedBy)
        if merge {
            try await execute("""
                INSERT INTO device_live_activity_message (device_uuid, message, updated_by)
                SELECT * FROM unnest(\(devices)::uuid[], \(messages)::text[], \(authors)::text[])
                ON CONFLICT (device_uuid) DO UPDATE SET message = excluded.message, updated_by = excluded.updated_by
                """)
            return
        }
        do {
            try await execute("""
                INSERT INTO device_live_activity_message (device_uuid, message, updated_by)
                SELECT * FROM unnest(\(devices)::uuid[], \(messages)::text[], \(authors)::text[])
                """)
        } catch StoreError.conflict {
            // The database names the key only in its detail: look up which device has its row already.
            let taken = try await values("""
                SELECT device_uuid FROM device_live_activity_message WHERE device_uuid = ANY(\(devices)::uuid[])
                ORDER BY device_uuid LIMIT 1
                """, as: UUID.self).first
            let device = taken.map { "device \($0.uuidString.lowercased())" } ?? "a device of this request"
            throw StoreError.conflict(
                "\(device) has a message already: send Prefer: resolution=merge-duplicates to replace it")
        }
    }

    /// Why writes that name one device twice are refused (which row wins would be a guess); nil when none does.
    static func repeatedDeviceRefusal(_ writes: [DeviceMessageWrite]) -> String? {
        var firstRow: [UUID: Int] = [:]
        for (index, write) in writes.enumerated() {
            if let first = firstRow[write.device] {
                return "device_uuid \(write.device.uuidString.lowercased()) is given twice (rows \(first + 1) and "
                    + "\(index + 1)): a device has one message, so send it once"
            }
            firstRow[write.device] = index
        }
        return nil
    }

    /// Sets the message of the device a selector names, and returns it as stored with the number of the device's
    /// active activities (the triggers push it to each of them).
    @discardableResult
    public func setMessage(_ message: String, for selector: DeviceSelector, by author: String) async throws
        -> (message: DeviceMessage, activeActivities: Int) {
        struct Written: Decodable { let message: DeviceMessage, activeActivities: Int }
        if let refusal = Self.messageLengthRefusal(message) { throw StoreError.invalidArgument(refusal) }
        let device = try await deviceUUID(selector)
        // One statement writes the row and answers it as stored, with the activities it goes to.
        guard let written = try await records("""
            INSERT INTO device_live_activity_message AS m (device_uuid, message, updated_by)
            VALUES (\(device), \(message), \(author))
            ON CONFLICT (device_uuid) DO UPDATE SET message = excluded.message, updated_by = excluded.updated_by
            RETURNING json_build_object('message', (\(unescaped: Self.messageJSON))::json,
                'activeActivities', (SELECT count(*) FROM activity_registration a
                                     WHERE a.device_uuid = m.device_uuid AND a.status = 'active'))::text
            """, as: Written.self).first else {
            throw StoreError.notFound("the message of \(selector) was not found after writing it")
        }
        return (written.message, written.activeActivities)
    }

    /// The message of the device a selector names; nil when it has none.
    public func message(for selector: DeviceSelector) async throws -> (device: UUID, message: DeviceMessage?) {
        let device = try await deviceUUID(selector)
        return (device, try await messages(device: device).first)
    }

    /// The messages of one device, or of all (at most 1000).
    public func messages(device: UUID?) async throws -> [DeviceMessage] {
        try await records("""
            SELECT \(unescaped: Self.messageJSON) FROM device_live_activity_message m
            WHERE \(device)::uuid IS NULL OR m.device_uuid = \(device)
            ORDER BY device_uuid LIMIT 1000
            """, as: DeviceMessage.self)
    }
}
