import Foundation
import LiveRelayPostgres
import PostgresNIO
import Testing

/// The webhook queue's claim (sql/037_webhook_queue.sql) on its own, as two workers call it side by side.
@Suite("Webhook claim SQL")
struct WebhookClaimSQLTests {
    @Test("a chain is sent only up to a row another worker holds: the rows after it wait, in order")
    func gapInChain() async throws {
        try await Harness.with { h in
            try await Self.startChain(h, session: "chain")
            // Three events of one activity for the endpoint: started (from the registration), then two more.
            try await h.sql("""
                SELECT liverelay_emit_lifecycle(ARRAY['live_activity.updated', 'live_activity.updated'],
                                                ARRAY[id, id], NULL, false)
                FROM activity_registration WHERE session_id = 'chain'
                """)
            let ids = try await h.rows("SELECT id FROM webhook_outbox ORDER BY id", as: Int64.self)
            try #require(ids.count == 3)
            let chain = try await h.rows("""
                SELECT endpoint_id::text || ' ' || activity_id::text FROM webhook_outbox LIMIT 1
                """, as: String.self)[0].split(separator: " ").compactMap { UUID(uuidString: String($0)) }
            try await Self.withTwoSessions(h) { worker, other in
                // Another worker holds the middle row: its claim locked the row and its transaction is still open.
                try await other.query("BEGIN", logger: h.logger)
                try await other.query("SELECT 1 FROM webhook_outbox WHERE id = \(ids[1]) FOR UPDATE",
                                      logger: h.logger)
                #expect(try await Self.claim(on: worker, h) == [ids[0]],
                        "the first row goes; the third waits behind the second")
                try await Self.unlock(chain, on: worker, h)
                try await other.query("ROLLBACK", logger: h.logger)
                #expect(try await Self.claim(on: worker, h) == ids, "nothing held: the whole chain, in order")
                // The claim's chain lock outlives its statement: it is the lease while the worker sends.
                #expect(try await Self.claim(on: other, h) == [], "another worker waits for the lease")
                #expect(try await Self.claim(on: worker, h, busy: chain) == [],
                        "the worker itself names the chains it is sending")
                try await Self.unlock(chain, on: worker, h)
                #expect(try await Self.claim(on: other, h) == ids, "unlocked: the next worker takes the chain")
            }
        }
    }

    @Test("a claim whose chain is all held back leaves no lock behind")
    func heldBackChainUnlocked() async throws {
        try await Harness.with { h in
            try await Self.startChain(h, session: "held")
            let ids = try await h.rows("SELECT id FROM webhook_outbox ORDER BY id", as: Int64.self)
            try #require(ids.count == 1)
            try await Self.withTwoSessions(h) { worker, other in
                try await other.query("BEGIN", logger: h.logger)
                try await other.query("SELECT 1 FROM webhook_outbox WHERE id = \(ids[0]) FOR UPDATE",
                                      logger: h.logger)
                // A second event arrives: the worker claims it, locks the chain, finds it behind the held row.
                try await h.sql("""
                    SELECT liverelay_emit_lifecycle(ARRAY['live_activity.updated'], ARRAY[id], NULL, false)
                    FROM activity_registration WHERE session_id = 'held'
                    """)
                #expect(try await Self.claim(on: worker, h) == [])
                try await other.query("ROLLBACK", logger: h.logger)
                let all = try await h.rows("SELECT id FROM webhook_outbox ORDER BY id", as: Int64.self)
                #expect(try await Self.claim(on: other, h) == all, "the worker kept no lock on the chain")
            }
        }
    }

    @Test("the sweeper removes events whose endpoint is gone and keeps the others")
    func orphansDropped() async throws {
        try await Harness.with { h in
            try await Self.startChain(h, session: "kept")
            // A writer that read an endpoint just before it was deleted queued an event for it.
            try await h.sql("""
                INSERT INTO webhook_outbox (endpoint_id, event_id, event_type, activity_id, body)
                SELECT gen_random_uuid(), gen_random_uuid(), 'live_activity.updated', id, '{}'
                FROM activity_registration
                """)
            #expect(try await h.rows("SELECT liverelay_drop_orphan_webhooks(100)", as: Int32.self) == [1])
            #expect(try await h.rows("""
                SELECT count(*)::int8 FROM webhook_outbox o JOIN webhook_endpoint w ON w.id = o.endpoint_id
                """, as: Int64.self) == [1])
            #expect(try await h.rows("SELECT count(*)::int8 FROM webhook_outbox", as: Int64.self) == [1])
        }
    }

    /// A webhook endpoint and an activity registered for it: its chain holds the `started` event.
    static func startChain(_ h: Harness, session: String) async throws {
        try await h.sql("""
            INSERT INTO webhook_endpoint (url, secret) VALUES ('http://127.0.0.1:9/hook', 'whsec_claim_0123456789')
            """)
        _ = try await h.registerActivity(session: session)
    }

    /// Two sessions of the test's database, as two workers (or relays) hold them.
    static func withTwoSessions(
        _ h: Harness, _ body: (_ worker: PostgresConnection, _ other: PostgresConnection) async throws -> Void
    ) async throws {
        let connector = try DatabaseConnector(url: h.databaseURL)
        try await connector.withConnection(logger: h.logger) { other in
            try await connector.withConnection(logger: h.logger) { worker in
                try await body(worker, other)
            }
        }
    }

    static func claim(on connection: PostgresConnection, _ h: Harness, busy: [UUID] = []) async throws -> [Int64] {
        var ids: [Int64] = []
        let busyEndpoints = busy.isEmpty ? [] : [busy[0]], busyActivities = busy.isEmpty ? [] : [busy[1]]
        for try await id in try await connection.query("""
            SELECT id FROM liverelay_claim_webhooks(500, \(busyEndpoints)::uuid[], \(busyActivities)::uuid[])
            """, logger: h.logger).decode(Int64.self) {
            ids.append(id)
        }
        return ids
    }

    static func unlock(_ chain: [UUID], on connection: PostgresConnection, _ h: Harness) async throws {
        try await connection.query("""
            SELECT liverelay_unlock_webhook_chains(ARRAY[\(chain[0])]::uuid[], ARRAY[\(chain[1])]::uuid[])
            """, logger: h.logger)
    }
}
