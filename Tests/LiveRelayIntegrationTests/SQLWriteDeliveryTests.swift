import APNsSimulator
import Foundation
import LiveRelayCore
import PostgresNIO
import Testing

/// README "What a SQL write does", end to end: SQL in, HTTP/2 + TLS push out.
@Suite("SQL write → APNs push")
struct SQLWriteDeliveryTests {
    @Test("UPDATE content_state sends a liveactivity update with Apple's headers and payload")
    func updateSendsLiveActivityPush() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                let token = try await h.registerActivity(session: "s-update")
                let before = Int64(Date().timeIntervalSince1970)
                try await h.sql(#"""
                    UPDATE activity_registration SET content_state = '{"status": "done", "n": 1}'
                    WHERE session_id = 's-update'
                    """#)
                let push = try #require(try await h.waitForPushes { $0.count == 1 }.first)
                #expect(push.token == token)
                #expect(push.environment == "production")
                #expect(push.pushType == "liveactivity")
                #expect(push.topic == "\(Harness.bundleID).push-type.liveactivity")
                #expect(push.priority == "10")
                #expect(UUID(uuidString: push.apnsID) != nil)
                #expect(Int64(push.expiration ?? "") ?? 0 > before)
                #expect(push.event == "update")
                #expect(push.contentState == ["status": .string("done"), "n": .integer(1)])
                let timestamp = try #require(push.timestamp)
                #expect(timestamp >= before && timestamp <= Int64(Date().timeIntervalSince1970))
                try await h.waitUntil("SELECT count(*) = 1 FROM delivery_log")
                let log = try await h.rows(
                    "SELECT status || ' ' || apns_status::text FROM delivery_log WHERE session_id = 's-update'",
                    as: String.self)
                #expect(log == ["sent 200"])
            }
        }
    }

    @Test("""
        with the poll effectively off and wake-ups by NOTIFY only, every write to an idle relay wakes it (the wake-up \
        gate re-opens after each)
        """)
    func everyWriteWakesAnIdleRelay() async throws {
        try await Harness.with { h in
            // A one-minute poll: only NOTIFY can deliver within the 15 s each round allows (a loaded machine running
            // the whole suite side by side can take seconds). (WALWakeupTests has the same with the log.)
            try await h.withRelay(environment: ["LIVERELAY_POLL_INTERVAL_MS": "60000", "LIVERELAY_WAKEUP": "notify"]) {
                let token = try await h.registerActivity(session: "s-wake")
                for round in 1...6 {
                    // Sometimes the next write comes while the relay is still finishing, sometimes when it idles.
                    if round.isMultiple(of: 2) { try await Task.sleep(for: .milliseconds(300)) }
                    try await h.sql("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(round))
                        WHERE session_id = 's-wake'
                        """)
                    _ = try await h.waitForPushes(timeout: .seconds(15)) {
                        $0.last { $0.token == token }?.n == Int64(round)
                    }
                }
                // Once drained, the relay says it is idle again, so the next writer will notify.
                try await h.waitUntil("SELECT bool_and(idle) FROM relay_wakeup")
            }
        }
    }

    @Test("status = 'ended' sends an end push with the last content-state and the dismissal date")
    func endSendsEndPush() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.registerActivity(session: "s-end", state: #"{"status": "complete"}"#)
                try await h.sql("""
                    UPDATE activity_registration SET status = 'ended', dismissal_date = to_timestamp(2000000000)
                    WHERE session_id = 's-end'
                    """)
                let push = try #require(try await h.waitForPushes { $0.count == 1 }.first)
                #expect(push.event == "end")
                #expect(push.contentState == ["status": .string("complete")])
                #expect(push.aps["dismissal-date"] == .integer(2_000_000_000))
            }
        }
    }

    @Test("a device message is merged as note into every active activity of the device, and broadcast")
    func deviceMessageMergesNote() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                let device = UUID()
                let first = try await h.registerActivity(
                    session: "s-note-1", device: device, state: #"{"mode": "vpn"}"#)
                let second = try await h.registerActivity(
                    session: "s-note-2", device: device, state: #"{"mode": "pac"}"#)
                try await h.registerActivity(session: "s-other-device", device: UUID())
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'Back at 3')")
                let pushes = try await h.waitForPushes { $0.count == 2 }
                #expect(Set(pushes.map(\.token)) == [first, second])
                #expect(
                    pushes.first { $0.token == first }?.contentState == [
                        "mode": .string("vpn"), "note": .string("Back at 3"),
                    ])

                // An empty message clears the note: "note": null.
                try await h.sql("UPDATE device_live_activity_message SET message = '' WHERE device_uuid = \(device)")
                let cleared = try await h.waitForPushes { $0.count == 4 }.suffix(2)
                #expect(cleared.allSatisfy { $0.contentState["note"] == .null })

                // The activity's own updates keep the device's note.
                try await h.sql(
                    "UPDATE device_live_activity_message SET message = 'Lunch' WHERE device_uuid = \(device)")
                try await h.waitForPushes { $0.count == 6 }
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"mode": "off"}' WHERE session_id = 's-note-1'"#
                )
                let last = try #require(try await h.waitForPushes { $0.count == 7 }.last)
                #expect(last.contentState == ["mode": .string("off"), "note": .string("Lunch")])

                let events = try await h.rows("""
                    SELECT event || ' ' || (data->>'message') FROM broadcast_log
                    WHERE 'device:' || \(device.uuidString.lowercased()) = ANY(channels)
                      AND event = 'live-activity-message' ORDER BY seq
                    """, as: String.self)
                #expect(
                    events == [
                        "live-activity-message Back at 3", "live-activity-message ", "live-activity-message Lunch",
                    ])
            }
        }
    }

    @Test("writes that could never be delivered are rejected by the database and change nothing")
    func undeliverableWritesAreRejected() async throws {
        try await Harness.with { h in
            try await h.registerActivity(session: "s-bad", state: #"{"n": 1}"#)
            await #expect(throws: PSQLError.self) {
                try await h.sql(#"""
                    UPDATE activity_registration SET content_state = '["not", "an", "object"]'
                    WHERE session_id = 's-bad'
                    """#)
            }
            do {
                try await h.sql("""
                    UPDATE activity_registration SET content_state = jsonb_build_object('x', repeat('a', 4100))
                    WHERE session_id = 's-bad'
                    """)
                Issue.record("an oversized payload was accepted")
            } catch let error as PSQLError {
                #expect(error.serverInfo?[.message]?.contains("APNs accepts at most 4096") == true)
                #expect(error.serverInfo?[.message]?.contains("s-bad") == true)
            }
            // A device message that would push an activity over the limit is rejected too.
            try await h.sql("""
                UPDATE activity_registration SET device_uuid = '00000000-0000-4000-8000-0000000000aa'
                WHERE session_id = 's-bad'
                """)
            await #expect(throws: PSQLError.self) {
                try await h.sql("""
                    INSERT INTO device_live_activity_message (device_uuid, message)
                    VALUES ('00000000-0000-4000-8000-0000000000aa', repeat('m', 4100))
                    """)
            }
            let state = try await h.rows(
                "SELECT content_state::text FROM activity_registration WHERE session_id = 's-bad'", as: String.self)
            #expect(state == [#"{"n": 1}"#])
            let queued = try await h.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self)
            #expect(queued == [0])
            let messages = try await h.rows("SELECT count(*)::int8 FROM device_live_activity_message", as: Int64.self)
            #expect(messages == [0])
        }
    }

    @Test("a registration inserted without bundle_id takes APNS_DEFAULT_BUNDLE_ID; without one, a refusal says so")
    func bundleDefault() async throws {
        try await Harness.with { h in
            // No relay has started on this database yet, so none has published a default bundle id.
            let secret = secretHash("sql-writer")
            do {
                try await h.sql("""
                    INSERT INTO activity_registration (secret_hash, session_id, activity_token)
                    VALUES (\(secret), 's-bundle', 'ab12')
                    """)
                Issue.record("a registration without bundle_id or a default was accepted")
            } catch let error as PSQLError {
                #expect(error.serverInfo?[.message] == "LiveRelay: activity s-bundle has no bundle_id, and no relay of "
                            + "this database has APNS_DEFAULT_BUNDLE_ID set")
                #expect(error.serverInfo?[.hint] == "Give bundle_id; nothing was changed.")
            }
            try await h.withRelay {
                let token = randomToken()
                try await h.sql("""
                    INSERT INTO activity_registration (secret_hash, session_id, activity_token)
                    VALUES (\(secret), 's-bundle', \(token))
                    """)
                try await h.sql(
                    "INSERT INTO device_registration (secret_hash, device_token) VALUES (\(secret), \(randomToken()))")
                let bundles = try await h.rows("""
                    SELECT bundle_id FROM activity_registration WHERE secret_hash = \(secret)
                    UNION ALL SELECT bundle_id FROM device_registration WHERE secret_hash = \(secret)
                    """, as: String.self)
                #expect(bundles == [Harness.bundleID, Harness.bundleID])
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-bundle'"#)
                let push = try #require(try await h.waitForPushes { $0.contains { $0.token == token } }.last)
                #expect(push.topic == "\(Harness.bundleID).push-type.liveactivity")
            }
        }
    }

    @Test("a payload just under 4096 bytes is accepted and delivered whole")
    func nearLimitPayloadIsDelivered() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.registerActivity(session: "s-big")
                // {"aps":{"content-state":{"x":"…"},"event":"update","timestamp":1234567890}} is 74 bytes + the
                // string: one byte more is refused, exactly 4096 goes through.
                await #expect(throws: PSQLError.self) {
                    try await h.sql("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('x', repeat('a', 4096 - 73))
                        WHERE session_id = 's-big'
                        """)
                }
                try await h.sql("""
                    UPDATE activity_registration SET content_state = jsonb_build_object('x', repeat('a', 4096 - 74))
                    WHERE session_id = 's-big'
                    """)
                let push = try #require(try await h.waitForPushes { $0.count == 1 }.first)
                #expect(push.payload.compactBytes.count == 4096)
            }
        }
    }
}
