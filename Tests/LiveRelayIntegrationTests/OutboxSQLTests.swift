import Foundation
import LiveRelayCore
@testable import LiveRelayPostgres
import PostgresNIO
import Testing

/// The delivery queue's SQL functions (sql/040_delivery.sql) on their own, as a worker calls them.
@Suite("Outbox SQL functions")
struct OutboxSQLTests {
    @Test("liverelay_claim_deliveries: a second worker skips the rows the first holds and may not send their activity")
    func claim() async throws {
        try await Harness.with { h in
            try await h.registerActivity(session: "claimed")
            for n in 1...2 {
                try await h.sql("UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))")
            }
            let connector = try DatabaseConnector(url: h.databaseURL)
            try await connector.withConnection(logger: h.logger) { first in
                try await connector.withConnection(logger: h.logger) { second in
                    try await first.query("BEGIN", logger: h.logger)
                    try await second.query("BEGIN", logger: h.logger)
                    let mine = try await Self.claim(1, on: first, h)
                    let theirs = try await Self.claim(10, on: second, h)
                    #expect(mine.count == 1 && mine[0].locked && mine[0].status == "active")
                    #expect(theirs.count == 1 && theirs[0].id != mine[0].id, "the row the first holds is skipped")
                    #expect(theirs.first?.locked == false, "one sender per activity: the second may not send it now")
                    try await first.query("ROLLBACK", logger: h.logger)
                    let after = try await Self.claim(10, on: first, h)
                    #expect(after.map(\.id) == [mine[0].id], "rolled back, the row is claimable again")
                    try await first.query("ROLLBACK", logger: h.logger)
                    try await second.query("ROLLBACK", logger: h.logger)
                }
            }
        }
    }

    @Test("a worker's transaction begun before a write still claims it, by primary key and by the general claim")
    func claimInOlderTransaction() async throws {
        try await Harness.with { h in
            try await h.registerActivity(session: "early")
            let connector = try DatabaseConnector(url: h.databaseURL)
            try await connector.withConnection(logger: h.logger) { worker in
                // The worker begins its next batch's transaction ahead of time, as DeliveryWorker does: its now() is
                // older than the row the write below queues (whose next_attempt_at is the writer's now()).
                try await worker.query("BEGIN", logger: h.logger)
                try await worker.query("SELECT now()", logger: h.logger)
                try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
                let queued = try await h.rows("SELECT id FROM delivery_outbox", as: Int64.self)
                var byID: [Int64] = []
                for try await id in try await worker.query(
                    "SELECT id FROM liverelay_claim_deliveries(10, \(queued))", logger: h.logger).decode(Int64.self) {
                    byID.append(id)
                }
                #expect(byID == queued, "the row is due for a claim made after it was written")
                try await worker.query("ROLLBACK", logger: h.logger)
                try await worker.query("BEGIN", logger: h.logger)
                try await worker.query("SELECT now()", logger: h.logger)
                try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 2}'")
                #expect(try await Self.claim(10, on: worker, h).count == 2)
                try await worker.query("ROLLBACK", logger: h.logger)
            }
        }
    }

    @Test("a claim of activities alone, or of channels alone, reads each row as a claim holding both does")
    func claimWithAndWithoutChannels() async throws {
        // Activities' claims take a statement without the channel and widget joins (sql/040_delivery.sql), channels'
        // one without the activity and widget joins; a claim holding both takes the whole one. Each row must read the
        // same either way.
        try await Harness.with { h in
            try await h.registerActivity(session: "both")
            try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
            let activityRow = try await h.rows("SELECT id FROM delivery_outbox", as: Int64.self)
            try await h.sql("INSERT INTO broadcast_channel (name, bundle_id) VALUES ('beside', 'dev.liverelay.test')")
            let channelRow = try await h.rows("SELECT id FROM delivery_outbox WHERE kind = 'channel'", as: Int64.self)
            #expect(activityRow.count == 1 && channelRow.count == 1)
            let connector = try DatabaseConnector(url: h.databaseURL)
            try await connector.withConnection(logger: h.logger) { worker in
                func claim(_ ids: [Int64]) async throws -> [String: String] {
                    try await worker.query("BEGIN", logger: h.logger)
                    var rows: [String: String] = [:]
                    for try await (kind, columns) in try await worker.query("""
                        SELECT c.kind, (to_jsonb(c) - 'db_now')::text FROM liverelay_claim_deliveries(10, \(ids)) c
                        """, logger: h.logger).decode((String, String).self) {
                        rows[kind] = columns
                    }
                    try await worker.query("ROLLBACK", logger: h.logger)
                    return rows
                }
                let alone = try await claim(activityRow)
                let channelAlone = try await claim(channelRow)
                let beside = try await claim(activityRow + channelRow)
                #expect(alone.keys.sorted() == ["activity"] && beside.keys.sorted() == ["activity", "channel"])
                #expect(alone["activity"] == beside["activity"])
                #expect(channelAlone.keys.sorted() == ["channel"] && channelAlone["channel"] == beside["channel"])
                let activity = try #require(alone["activity"])
                #expect(activity.contains("\"locked\": true") && activity.contains("\"status\": \"active\""))
                let channel = try #require(beside["channel"])
                #expect(channel.contains("\"locked\": true") && channel.contains("\"channel_state\": \"{"))
            }
        }
    }

    static func claim(_ batch: Int32, on connection: PostgresConnection, _ h: Harness) async throws
        -> [(id: Int64, locked: Bool, status: String?)] {
        var rows: [(id: Int64, locked: Bool, status: String?)] = []
        for try await (id, locked, status) in try await connection.query(
            "SELECT id, locked, status FROM liverelay_claim_deliveries(\(batch))", logger: h.logger
        ).decode((Int64, Bool, String?).self) {
            rows.append((id, locked, status))
        }
        return rows
    }

    @Test("liverelay_record_batch logs each transport's answer and removes what is finished")
    func record() async throws {
        try await Harness.with { h in
            let id = try await h.registerAndroidActivity(session: "logged", token: randomFCMToken())
            try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
            let outbox = try #require(try await h.rows("SELECT id FROM delivery_outbox", as: Int64.self).first)
            try await h.sql("""
                SELECT liverelay_record_batch(
                    ARRAY[''], ARRAY['update'], ARRAY['logged'], ARRAY['failed'],
                    ARRAY['token invalidated: UNREGISTERED'],
                    ARRAY[\(outbox)]::int8[], ARRAY[\(id.uuidString)], ARRAY['data'], ARRAY[''], ARRAY['abcdefgh'],
                    ARRAY[gen_random_uuid()], ARRAY[404], ARRAY['UNREGISTERED'], ARRAY[1], ARRAY[12.5]::float8[],
                    ARRAY[''],
                    ARRAY['fcm'], ARRAY[10], ARRAY['requested'], ARRAY[''], ARRAY[\(outbox)]::int8[], '{}', '{}', '{}',
                    '{}', '{}', '{}', '{}')
                """)
            #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self) == [0])
            let logged = try await h.rows("""
                SELECT concat_ws(' ', status, transport, provider_status, provider_reason, apns_status IS NULL,
                                 push_type)
                FROM delivery_log
                """, as: String.self)
            #expect(logged == ["failed fcm 404 UNREGISTERED t data"], "APNs columns stay empty for FCM")
        }
    }

    @Test("what a log row lacks reaches the record functions as NULL: text, integer and float arrays, and empty ones")
    func nullableArrays() async throws {
        try await Harness.with { h in
            let rendered = try await h.rows("""
                SELECT concat_ws(' | ',
                    array_to_string(\(NullableArray(["a", nil, "", "d"]))::text[], ',', 'NULL'),
                    array_to_string(\(NullableArray<Int32>([nil, 0, 404]))::int4[], ',', 'NULL'),
                    array_to_string(\(NullableArray<Double>([12.5, nil, -1]))::float8[], ',', 'NULL'),
                    cardinality(\(NullableArray<String>([]))::text[]),
                    cardinality(\(NullableArray<String>([nil]))::text[]))
                """, as: String.self)
            // '' and 0 and -1 are values like any other; only a missing one is NULL.
            #expect(rendered == ["a,NULL,,d | NULL,0,404 | 12.5,NULL,-1 | 0 | 1"])
        }
    }

    @Test("liverelay_retire_tokens invalidates an activity only while it still holds the dead token, deletes devices")
    func retire() async throws {
        try await Harness.with { h in
            let dead = randomToken(), renewed = randomToken(), device = randomToken()
            try await h.registerActivity(session: "dead", token: dead)
            try await h.registerActivity(session: "renewed", token: renewed)
            try await h.sql("""
                INSERT INTO device_registration (secret_hash, device_token, bundle_id)
                VALUES (\(secretHash("s")), \(device), 'app')
                """)
            let ids = try await h.rows("SELECT id FROM activity_registration ORDER BY session_id", as: UUID.self)
            // The second activity's dead token is an older one: it registered a new token since.
            try await h.sql("""
                SELECT liverelay_retire_tokens(\(ids)::uuid[], ARRAY[\(dead), 'an-older-token'],
                    ARRAY['apns', 'apns'], ARRAY['Unregistered', 'Unregistered'], ARRAY[12.5, -1]::float8[],
                    ARRAY[\(device)], '{}')
                """)
            let statuses = try await h.rows(
                "SELECT session_id || ' ' || status FROM activity_registration ORDER BY session_id", as: String.self)
            #expect(statuses == ["dead invalidated", "renewed active"])
            // The invalidated event carries the answer that declared the token dead; a later psql write of the
            // status (no answer behind it) carries none.
            let delivery = try await h.rows("""
                SELECT (data -> 'data' -> 'delivery')::text FROM broadcast_log
                WHERE event = 'live_activity.invalidated'
                """, as: String.self)
            #expect(delivery == [
                #"{"reason": "Unregistered", "status": "failed", "transport": "apns", "latency_ms": 12.5}"#,
            ])
            try await h.sql("UPDATE activity_registration SET status = 'invalidated' WHERE session_id = 'renewed'")
            let kinds = try await h.rows("""
                SELECT (data -> 'data' ? 'delivery')::text FROM broadcast_log
                WHERE event = 'live_activity.invalidated' ORDER BY seq
                """, as: String.self)
            #expect(kinds == ["true", "false"])
            #expect(try await h.rows("SELECT count(*)::int8 FROM device_registration", as: Int64.self) == [0])
        }
    }
}
