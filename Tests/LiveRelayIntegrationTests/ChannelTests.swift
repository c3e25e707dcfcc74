import APNsSimulator
import Foundation
import LiveRelayCore
import PostgresNIO
import Testing

/// README "Broadcast channels", end to end: a row in `broadcast_channel`, Apple's channel API and broadcasts at the
/// simulator (which validates them as Apple does), the outcome in the row and in `delivery_log`.
@Suite("Broadcast channels")
struct ChannelTests {
    @Test("INSERT creates the channel at Apple, stores its id, then broadcasts the state given at INSERT")
    func insertCreatesThenBroadcasts() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.sql(#"""
                    INSERT INTO broadcast_channel (name, storage_policy, content_state)
                    VALUES ('match-1', 1, '{"score": "0-0"}')
                    """#)
                let broadcast = try #require(try await h.waitForBroadcasts { $0.count == 1 }.first)
                let channel = try #require(h.simulator.channels().first)
                #expect(h.simulator.channels().count == 1)
                #expect(channel.bundleID == Harness.bundleID && channel.storagePolicy == 1)
                #expect(broadcast.channelID == channel.channelID)
                #expect(broadcast.pushType == "liveactivity" && broadcast.priority == "10" && broadcast.topic == nil)
                #expect(Int64(broadcast.expiration) ?? 0 > Int64(Date().timeIntervalSince1970) + 7 * 3600)
                #expect(broadcast.event == "update" && broadcast.contentState == ["score": .string("0-0")])
                let stored = try await h.rows(
                    "SELECT apns_channel_id FROM broadcast_channel WHERE name = 'match-1'", as: String.self)
                #expect(stored == [channel.channelID])
                try await h.waitUntil("SELECT count(*) = 2 FROM delivery_log WHERE channel = 'match-1'")
                let log = try await h.rows("""
                    SELECT event_type || ' ' || status || ' ' || transport || ' ' || provider_status::text
                    FROM delivery_log WHERE channel = 'match-1' ORDER BY id
                    """, as: String.self)
                #expect(log == ["create sent apns-broadcast 201", "update sent apns-broadcast 200"])

                // Pushes and broadcasts share the simulator's sequence: reading pushes after one still finds the
                // pushes that follow it (a reader that numbered them by position skipped them, or crashed).
                let token = try await h.registerActivity(session: "after-broadcast")
                try await h.sql("""
                    UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 'after-broadcast'
                    """)
                try await h.waitForPushes { $0.contains { $0.token == token } }
                #expect(h.simulator.pushes(since: broadcast.sequence).map(\.token) == [token])
                #expect(h.simulator.pushes(since: broadcast.sequence + 100).isEmpty)
            }
        }
    }

    @Test("each UPDATE is one broadcast in order; a burst coalesces to the latest; end and DELETE as written")
    func updatesEndAndDelete() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.sql("INSERT INTO broadcast_channel (name) VALUES ('flight-7')")
                try await h.waitUntil("SELECT apns_channel_id IS NOT NULL FROM broadcast_channel")
                try await h.sql(#"UPDATE broadcast_channel SET content_state = '{"n": 1}'"#)
                _ = try await h.waitForBroadcasts { $0.count == 1 }
                for n in 2...30 {
                    try await h.sql("UPDATE broadcast_channel SET content_state = jsonb_build_object('n', \(n))")
                }
                let updates = try await h.waitForBroadcasts { $0.last?.n == 30 }
                let sequence = updates.compactMap(\.n)
                #expect(sequence == sequence.sorted() && Set(sequence).count == sequence.count)
                #expect(sequence.count <= 30)
                try await h.sql(
                    "UPDATE broadcast_channel SET status = 'ended', dismissal_date = to_timestamp(2000000000)")
                let end = try #require(try await h.waitForBroadcasts { $0.last?.event == "end" }.last)
                #expect(end.n == 30 && end.aps["dismissal-date"] == .integer(2_000_000_000))
                #expect(end.expiration == "0")
                // Writes to an ended channel send nothing; DELETE removes it at Apple.
                try await h.sql(#"UPDATE broadcast_channel SET content_state = '{"n": 99}'"#)
                try await h.sql("DELETE FROM broadcast_channel")
                try await h.waitUntil(
                    "SELECT count(*) = 1 FROM delivery_log WHERE event_type = 'delete' AND status = 'sent'")
                #expect(h.simulator.channels().isEmpty)
                #expect(h.simulator.broadcasts().allSatisfy { $0.n != 99 })
            }
        }
    }

    @Test("Apple's ChannelNotRegistered marks the row failed with the reason, and nothing is sent on it again")
    func refusalFailsTheChannel() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.sql("INSERT INTO broadcast_channel (name) VALUES ('gone')")
                try await h.waitUntil("SELECT apns_channel_id IS NOT NULL FROM broadcast_channel")
                let id = try #require(h.simulator.channels().first?.channelID)
                var faults = SimulatorFaults()
                faults.channelErrors = [id: "ChannelNotRegistered"]
                h.simulator.setFaults(faults)
                try await h.sql(#"UPDATE broadcast_channel SET content_state = '{"n": 1}'"#)
                try await h.waitUntil("SELECT status = 'failed' FROM broadcast_channel")
                let error = try await h.rows("SELECT error FROM broadcast_channel", as: String.self)
                #expect(error == ["ChannelNotRegistered"])
                h.simulator.setFaults(SimulatorFaults())
                try await h.sql(#"UPDATE broadcast_channel SET content_state = '{"n": 2}'"#)
                let queued = try await h.rows(
                    "SELECT count(*)::int FROM delivery_outbox WHERE kind = 'channel'", as: Int32.self)
                #expect(queued == [0])
                #expect(h.simulator.broadcasts().isEmpty)
            }
        }
    }

    @Test("a management API that is down is retried until it answers; the state written meanwhile is broadcast")
    func managementOutageIsRetried() async throws {
        try await Harness.with { h in
            var down = SimulatorFaults()
            down.channelManagementRate503 = 1
            down.retryAfterSeconds = 0
            h.simulator.setFaults(down)
            try await h.withRelay {
                try await h.sql("INSERT INTO broadcast_channel (name) VALUES ('outage')")
                try await h.waitUntil("SELECT count(*) >= 2 FROM delivery_log WHERE status = 'retrying'")
                try await h.sql(#"UPDATE broadcast_channel SET content_state = '{"n": 5}'"#)
                h.simulator.setFaults(SimulatorFaults())
                let broadcast = try #require(try await h.waitForBroadcasts(timeout: .seconds(30)) { !$0.isEmpty }.first)
                #expect(broadcast.n == 5)
                #expect(h.simulator.channels().count == 1)
            }
        }
    }

    @Test("the database refuses a bad name and an oversized state with a sentence, changing nothing")
    func refusals() async throws {
        try await Harness.with { h in
            try await h.migrate()
            await #expect(throws: (any Error).self) {
                try await h.sql("INSERT INTO broadcast_channel (name, bundle_id) VALUES ('has space', 'b')")
            }
            await #expect(throws: (any Error).self) {
                try await h.sql("""
                    INSERT INTO broadcast_channel (name, bundle_id, content_state)
                    VALUES ('big', 'b', jsonb_build_object('x', repeat('a', 5200)))
                    """)
            }
            let count = try await h.rows("SELECT count(*)::int FROM broadcast_channel", as: Int32.self)
            #expect(count == [0])
        }
    }
}

extension Harness {
    /// Waits until the simulator has accepted broadcasts satisfying `condition`.
    @discardableResult
    func waitForBroadcasts(timeout: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation,
                           _ condition: ([APNsSimulator.RecordedBroadcast]) -> Bool) async throws
        -> [APNsSimulator.RecordedBroadcast] {
        if try await pollUntil(timeout: timeout, { condition(simulator.broadcasts()) }) {
            return simulator.broadcasts()
        }
        let accepted = simulator.broadcasts().map { "\($0.aps["event"]?.stringValue ?? "?") \($0.contentState)" }
        Issue.record("timed out waiting for broadcasts; accepted \(accepted), responses \(simulator.responseCounts())",
                     sourceLocation: sourceLocation)
        throw TimedOut()
    }
}

extension APNsSimulator.RecordedBroadcast {
    var aps: [String: JSONValue] { payload.objectValue?["aps"]?.objectValue ?? [:] }
    var contentState: [String: JSONValue] { aps["content-state"]?.objectValue ?? [:] }
    var event: String? { aps["event"]?.stringValue }
    var n: Int64? { if case .integer(let value)? = contentState["n"] { return value } else { return nil } }
}

/// The Android side of a channel: one FCM topic message per update, independently of Apple's side.
@Suite("Broadcast channels on FCM")
struct ChannelFCMTests {
    @Test("an UPDATE sends one broadcast and one topic message with the channel's data; end ends both")
    func topicMessages() async throws {
        try await Harness.withFCMRelay { h, fcm, _ in
            try await h.sql(#"""
                INSERT INTO broadcast_channel (name, content_state) VALUES ('cup-final', '{"score": "1-0"}')
                """#)
            try await h.sql(#"UPDATE broadcast_channel SET content_state = '{"score": "2-0"}'"#)
            let messages = try await fcm.waitForMessages {
                $0.contains { $0.data["liveRelayContentState"] == #"{"score":"2-0"}"# }
            }
            #expect(messages.allSatisfy { $0.topic == "liverelay.cup-final" && $0.token.isEmpty })
            let last = try #require(messages.last)
            #expect(last.data["liveRelayChannel"] == "cup-final" && last.data["liveRelayEvent"] == "update")
            #expect(last.android?.objectValue?["collapse_key"] == .string("cup-final"))
            #expect(last.android?.objectValue?["priority"] == .string("high"))
            _ = try await h.waitForBroadcasts { $0.last?.contentState == ["score": .string("2-0")] }
            try await h.sql("UPDATE broadcast_channel SET status = 'ended'")
            _ = try await fcm.waitForMessages { $0.last?.data["liveRelayEvent"] == "end" }
            _ = try await h.waitForBroadcasts { $0.last?.event == "end" }
            try await h.waitUntil("""
                SELECT count(*) FILTER (WHERE transport = 'fcm-topic' AND status = 'sent') >= 2
                   AND count(*) FILTER (WHERE transport = 'apns-broadcast' AND status = 'sent') >= 2
                FROM delivery_log WHERE channel = 'cup-final'
                """)
            // The dashboard's counts (the admin channel's `deliveries` summaries) add up to what the log holds.
            let counts = try await h.rows("""
                SELECT unnest(ARRAY[(SELECT coalesce(sum((data->>'sent')::int), 0) FROM broadcast_log
                                     WHERE event = 'deliveries')::int8,
                                    (SELECT count(*) FROM delivery_log WHERE status = 'sent')])
                """, as: Int64.self)
            #expect(counts.count == 2 && counts[0] == counts[1] && counts[1] >= 4, "summed, logged: \(counts)")
        }
    }

    @Test("one statement over many channels queues Apple's broadcasts before the topic messages; both sides all sent")
    func broadcastsFirst() async throws {
        try await Harness.withFCMRelay { h, _, _ in
            try await h.sql("INSERT INTO broadcast_channel (name) SELECT 'many-' || i FROM generate_series(1, 5) i")
            try await h.waitUntil("SELECT bool_and(apns_channel_id IS NOT NULL) FROM broadcast_channel")
            let before = try await h.rows("SELECT coalesce(max(outbox_id), 0) FROM delivery_log", as: Int64.self)[0]
            try await h.sql("UPDATE broadcast_channel SET content_state = jsonb_build_object('n', 1)")
            let written = "FROM delivery_log WHERE event_type = 'update' AND outbox_id > \(before)"
            try await h.waitUntil("SELECT count(*) = 10 AND bool_and(status = 'sent') \(unescaped: written)")
            let order = try await h.rows("SELECT transport \(unescaped: written) ORDER BY outbox_id", as: String.self)
            #expect(order == Array(repeating: "apns-broadcast", count: 5) + Array(repeating: "fcm-topic", count: 5))
        }
    }
}
