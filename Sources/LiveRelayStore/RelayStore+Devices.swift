import Foundation
import LiveRelayCore
import PostgresNIO

extension RelayStore {
    /// The one `device_uuid` a selector names. A name on rows of more than one device is ambiguous.
    public func deviceUUID(_ selector: DeviceSelector) async throws -> UUID {
        switch selector {
        case .uuid(let uuid):
            let known = try await values("""
                SELECT EXISTS (SELECT 1 FROM device_registration WHERE device_uuid = \(uuid))
                    OR EXISTS (SELECT 1 FROM activity_registration WHERE device_uuid = \(uuid))
                    OR EXISTS (SELECT 1 FROM device_live_activity_message WHERE device_uuid = \(uuid))
                """, as: Bool.self).first ?? false
            guard known else {
                throw StoreError.notFound("no device \(uuid.uuidString.lowercased()) is registered "
                                          + "(GET /v1/devices, or the MCP tool list_devices, lists them)")
            }
            return uuid
        case .name(let name):
            let matches = try await values("""
                SELECT DISTINCT device_uuid FROM device_registration
                WHERE lower(device_name) = lower(\(name)) AND device_uuid IS NOT NULL ORDER BY device_uuid LIMIT 20
                """, as: UUID.self)
            switch matches.count {
            case 0:
                // An agent that was told "the Demo phone" finds the names that hold what it gave.
                let near = try await values("""
                    SELECT DISTINCT device_name FROM device_registration
                    WHERE strpos(lower(device_name), lower(\(name))) > 0 ORDER BY device_name LIMIT 5
                    """, as: String.self)
                let hint = near.isEmpty ? "" : "; names that contain it: "
                    + near.map { "\"\($0)\"" }.joined(separator: ", ")
                throw StoreError.notFound("no device is named \"\(name.excerpt)\"\(hint) (GET /v1/devices, or the MCP "
                                          + "tool list_devices, lists the names)")
            case 1: return matches[0]
            default:
                let uuids = matches.map { $0.uuidString.lowercased() }.joined(separator: ", ")
                throw StoreError.ambiguous(
                    "\(matches.count) devices are named \"\(name)\": \(uuids); give device_uuid instead")
            }
        }
    }

    /// Devices with a uuid (registered, named by an activity, or given a message), most recently changed first.
    public func devices(limit: Int = 100) async throws -> [Device] {
        try Self.check(limit: limit)
        return try await records("""
            SELECT json_build_object('device_uuid', d.device_uuid, 'device_name', d.device_name,
                'platform', d.platform, 'token_suffixes', d.suffixes,
                'has_push_to_start', cardinality(starts.types) > 0, 'push_to_start_types', starts.types,
                'message', m.message, 'message_updated_at', m.updated_at,
                'active_activities', (SELECT count(*) FROM activity_registration a
                                      WHERE a.device_uuid = d.device_uuid AND a.status = 'active'),
                'updated_at', d.updated_at)::text
            FROM (SELECT device_uuid,
                         (array_agg(device_name ORDER BY updated_at DESC) FILTER (WHERE device_name IS NOT NULL))[1]
                             AS device_name,
                         (array_agg(platform ORDER BY updated_at DESC) FILTER (WHERE platform IS NOT NULL))[1]
                             AS platform,
                         coalesce(array_agg(right(token, 8) ORDER BY updated_at DESC) FILTER (WHERE token IS NOT NULL),
                                  '{}') AS suffixes,
                         max(updated_at) AS updated_at
                  FROM (SELECT device_uuid, device_name, platform, device_token AS token, updated_at
                        FROM device_registration WHERE device_uuid IS NOT NULL
                        UNION ALL
                        -- A device known only by its activities (registered with a deviceUUID) is a device too.
                        SELECT device_uuid, NULL, platform, NULL, updated_at
                        FROM activity_registration WHERE device_uuid IS NOT NULL
                        UNION ALL
                        -- And so is one that only has a message so far (its platform is not known yet).
                        SELECT device_uuid, NULL, NULL, NULL, updated_at FROM device_live_activity_message) r
                  GROUP BY device_uuid) d
            LEFT JOIN device_live_activity_message m ON m.device_uuid = d.device_uuid
            -- The attributes types it holds push-to-start tokens for (`pushToStartToken` is the default type's).
            CROSS JOIN LATERAL (
                SELECT ARRAY(SELECT p.attributes_type FROM device_registration r
                             JOIN device_push_to_start p ON p.device_id = r.id WHERE r.device_uuid = d.device_uuid
                             UNION
                             SELECT 'SessionActivityAttributes' FROM device_registration r
                             WHERE r.device_uuid = d.device_uuid AND r.push_to_start_token IS NOT NULL
                             ORDER BY 1) AS types) starts
            ORDER BY d.updated_at DESC, d.device_uuid LIMIT \(limit)
            """, as: Device.self)
    }

    static func check(limit: Int, range: ClosedRange<Int> = 1...1000) throws {
        guard range.contains(limit) else {
            throw StoreError.invalidArgument(
                "limit must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
    }
}
