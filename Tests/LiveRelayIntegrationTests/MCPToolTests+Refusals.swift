import Foundation
import LiveRelayCore
import MCP
import Testing

extension MCPToolTests {
    @Test("refusals are isError sentences and write nothing")
    func refusals() async throws {
        try await Harness.with { h in
            let (first, second) = (UUID(), UUID())
            try await h.sql("""
                INSERT INTO device_registration (secret_hash, device_token, bundle_id, device_uuid, device_name)
                VALUES (\(secretHash("x")), 't1', 'b', \(first), 'Twin'),
                       (\(secretHash("y")), 't2', 'b', \(second), 'Twin')
                """)
            try await h.registerActivity(session: "s1", device: first)
            // One session on two phones (as `liverelay dev`'s demo session is): which to update is the caller's choice.
            try await h.registerActivity(session: "both", device: first)
            try await h.sql("""
                INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, platform,
                                                   device_uuid, content_state)
                VALUES (\(secretHash("other-secret")), 'both', 'fcm-token', \(Harness.bundleID), 'android', \(second),
                        '{"n": 0}')
                """)
            try await withClient(h) { client in
                let cases: [(String, [String: Value], String)] = [
                    ("set_live_activity_message", ["deviceName": "Twin", "message": "x"], "2 devices are named"),
                    ("set_live_activity_message", ["deviceName": "tw", "message": "x"],
                     "no device is named \"tw\"; names that contain it: \"Twin\" (GET /v1/devices"),
                    ("set_live_activity_message", ["device_uuid": .string(UUID().uuidString), "message": "x"],
                     "no device"),
                    ("set_live_activity_message",
                     ["device_uuid": .string(first.uuidString), "deviceName": "Twin", "message": "x"], "not both"),
                    ("set_live_activity_message", ["message": "x"], "device_uuid or deviceName"),
                    ("set_live_activity_message", ["device_uuid": .string(first.uuidString)], "message is required"),
                    ("set_live_activity_message",
                     ["device_uuid": .string(first.uuidString),
                      "message": .string(String(repeating: "é", count: 2040))],
                     "4096"),
                    ("set_live_activity_message", ["device_uuid": .string(first.uuidString), "mesage": "x"],
                     "unknown argument mesage"),
                    ("update_live_activity", ["session_id": "s1", "content_state": "done"], "JSON object"),
                    ("update_live_activity", ["session_id": "s1", "content_state": ["a": 1], "alert": "hi"],
                     "alert must be a JSON object"),
                    ("update_live_activity", ["session_id": "s1", "content_state": ["a": 1], "alert": ["title": 5]],
                     "alert.title must be a string"),
                    ("update_live_activity", ["session_id": "s1", "id": .string(UUID().uuidString),
                                              "content_state": ["a": 1]], "not both"),
                    ("end_live_activity", ["session_id": "nope"], "no live activity"),
                    ("update_live_activity", ["session_id": "both", "content_state": ["n": 1]],
                     "2 live activities have that session_id: "),
                    ("end_live_activity", ["session_id": "s1", "dismissal_date": "soon"], "ISO 8601"),
                    ("list_devices", ["limit": 0], "limit"),
                    ("list_live_activities", ["status": "paused"],
                     #"status must be active, ended or invalidated, not "paused""#),
                    ("recent_deliveries", ["status": "lost"],
                     #"status must be sent, failed, coalesced, retrying or skipped, not "lost""#),
                    ("no_such_tool", [:], "There is no tool"),
                ]
                for (name, arguments, expected) in cases {
                    let (content, isError) = try await client.callTool(name: name, arguments: arguments)
                    #expect(isError == true, "\(name) \(arguments)")
                    #expect(Self.text(content).contains(expected), "\(Self.text(content))")
                }
                let sessionOnTwo = Self.text(try await client.callTool(
                    name: "end_live_activity", arguments: ["session_id": "both"]).content)
                #expect(sessionOnTwo.contains("(android, device \(second.uuidString.lowercased()))")
                        && sessionOnTwo.contains("(ios, device \(first.uuidString.lowercased()))")
                        && sessionOnTwo.hasSuffix("give the id of one"), "\(sessionOnTwo)")
                let both = Self.text(try await client.callTool(
                    name: "set_live_activity_message", arguments: ["deviceName": "Twin", "message": "x"]).content)
                #expect(both.contains(first.uuidString.lowercased()) && both.contains(second.uuidString.lowercased()))
            }
            #expect(try await h.rows("SELECT count(*)::int8 FROM device_live_activity_message", as: Int64.self) == [0])
            #expect(try await h.rows("SELECT status FROM activity_registration", as: String.self)
                    == ["active", "active", "active"])
        }
    }
}
