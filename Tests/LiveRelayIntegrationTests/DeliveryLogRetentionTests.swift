import Foundation
@testable import LiveRelayDelivery
import LiveRelayPostgres
import PostgresNIO
import Testing

/// `delivery_log` keeps its rows for the retention (LIVERELAY_DELIVERY_LOG_RETENTION), then the relay deletes them.
@Suite("Delivery log retention")
struct DeliveryLogRetentionTests {
    /// Seven rows a day old and three an hour old; the retention is half a day.
    func writeLog(_ h: Harness) async throws {
        try await h.sql("""
            INSERT INTO delivery_log (event_type, status, session_id, created_at)
            SELECT 'update', 'sent', 'old-' || i, now() - interval '1 day' FROM generate_series(1, 7) AS i
            UNION ALL
            SELECT 'update', 'sent', 'new-' || i, now() - interval '1 hour' FROM generate_series(1, 3) AS i
            """)
    }

    func sessions(_ h: Harness) async throws -> [String] {
        try await h.rows("SELECT session_id FROM delivery_log ORDER BY session_id", as: String.self)
    }

    @Test("rows older than the retention are deleted, a batch at a time until none is left; newer rows stay")
    func prunesOldRows() async throws {
        try await Harness.with { h in
            try await writeLog(h)
            let connector = try DatabaseConnector(url: h.databaseURL)
            // Batches of 3: the prune repeats its statement until one deletes fewer (3, 3, 1).
            let retention = DeliveryLogRetention(connector: connector, keepSeconds: 43_200, batch: 3, logger: h.logger)
            let deleted = try await connector.withConnection(logger: h.logger) { connection in
                try await retention.prune(on: connection)
            }
            #expect(deleted == 7)
            #expect(try await sessions(h) == ["new-1", "new-2", "new-3"])
        }
    }

    @Test("a running relay's retention prunes on its own; rows another prune holds are passed over, not waited for")
    func runsAndSkipsHeldRows() async throws {
        try await Harness.with { h in
            try await writeLog(h)
            let connector = try DatabaseConnector(url: h.databaseURL)
            try await connector.withConnection(logger: h.logger) { other in
                // Another relay's prune holding one old row, its transaction still open.
                try await other.query("BEGIN", logger: h.logger)
                try await other.query(
                    "SELECT id FROM delivery_log WHERE session_id = 'old-4' FOR UPDATE", logger: h.logger)
                let retention = DeliveryLogRetention(
                    connector: connector, keepSeconds: 43_200, interval: .milliseconds(100), logger: h.logger)
                let running = Task { try await retention.run() }
                defer { running.cancel() }
                try await h.waitUntil("SELECT count(*) = 4 FROM delivery_log")
                #expect(try await sessions(h) == ["new-1", "new-2", "new-3", "old-4"])
                try await other.query("COMMIT", logger: h.logger)
                try await h.waitUntil("SELECT count(*) = 3 FROM delivery_log")
                #expect(try await sessions(h) == ["new-1", "new-2", "new-3"])
            }
        }
    }
}
