import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging
import PostgresNIO
import Testing

/// The relay woken by the write-ahead log (`LIVERELAY_WAKEUP=auto`, the default): over a real replication connection,
/// with the poll at a minute, so that only a wake-up delivers within the time each write is given.
@Suite("Wake-up from the write-ahead log", .timeLimit(.minutes(5)))
struct WALWakeupTests {
    static let pollOff = ["LIVERELAY_POLL_INTERVAL_MS": "60000"]

    static func write(_ h: Harness, _ session: String, _ n: Int) async throws {
        try await h.sql("""
            UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n)) WHERE session_id = \(session)
            """)
    }

    static func delivered(_ h: Harness, _ token: String, _ n: Int) async throws {
        _ = try await h.waitForPushes(timeout: .seconds(15)) { $0.last { $0.token == token }?.n == Int64(n) }
    }

    @Test("every write wakes the relay, which reads the log; its row says so, and writers send no NOTIFY")
    func writesWakeWithoutNotify() async throws {
        try await Harness.with { h in
            try await h.withRelay(environment: Self.pollOff) {
                try await h.waitUntil("SELECT bool_and(reads_wal AND NOT idle) FROM relay_wakeup")
                let token = try await h.registerActivity(session: "s-wal")
                let heard = try await h.wakeUpNotifications {
                    for round in 1...6 {
                        // Sometimes the next write comes while the relay is still finishing, sometimes later.
                        if round.isMultiple(of: 2) { try await Task.sleep(for: .milliseconds(300)) }
                        try await Self.write(h, "s-wal", round)
                        try await Self.delivered(h, token, round)
                    }
                }
                #expect(heard.isEmpty, "the writers notified: \(heard)")
            }
        }
    }

    @Test("after TRUNCATE (the outbox in a new file) the next write still wakes the relay")
    func outboxTruncated() async throws {
        try await Harness.with { h in
            try await h.withRelay(environment: Self.pollOff) {
                try await h.waitUntil("SELECT bool_and(reads_wal) FROM relay_wakeup")
                let token = try await h.registerActivity(session: "s-truncate")
                try await Self.write(h, "s-truncate", 1)
                try await Self.delivered(h, token, 1)
                try await h.sql("TRUNCATE delivery_outbox")
                try await Self.write(h, "s-truncate", 2)
                try await Self.delivered(h, token, 2)
            }
        }
    }

    @Test("a bulk write drains in full batches: 1,200 activities updated in one statement take a handful of claims")
    func bulkDrainsInFullBatches() async throws {
        try await Harness.with { h in
            try await h.withRelay(environment: Self.pollOff) {
                try await h.waitUntil("SELECT bool_and(reads_wal AND NOT idle) FROM relay_wakeup")
                try await h.sql("""
                    INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env)
                    SELECT \(secretHash("test-secret")), 'bulk-' || i, md5(i::text) || md5(i::text),
                           \(Harness.bundleID), 'production'
                    FROM generate_series(1, 1200) AS i
                    """)
                try await h.sql("""
                    UPDATE activity_registration SET content_state = '{"status": "bulk"}' WHERE session_id LIKE 'bulk-%'
                    """)
                try await h.waitUntil(timeout: .seconds(60), """
                    SELECT count(*) = 1200 FROM delivery_log WHERE session_id LIKE 'bulk-%' AND status = 'sent'
                    """)
                // Each batch records its rows in one transaction, so one log time per batch: 64 and 64 (each worker's
                // first batch after its wait), then full batches of 500. Claims of 64 all the way took 19.
                let batches = try await h.rows("""
                    SELECT count(DISTINCT created_at)::int8 FROM delivery_log WHERE session_id LIKE 'bulk-%'
                    """, as: Int64.self)
                #expect(batches.first.map { $0 <= 8 } == true, "\(batches) batches")
            }
        }
    }

    @Test("when the replication connection is lost, writers notify the relay again, and the log takes over once back")
    func connectionLost() async throws {
        try await Harness.with { h in
            try await h.withRelay(environment: Self.pollOff) {
                try await h.waitUntil("SELECT bool_and(reads_wal) FROM relay_wakeup")
                let token = try await h.registerActivity(session: "s-lost")
                // This relay's replication connection, named after its gate row.
                try await h.sql("""
                    SELECT pg_terminate_backend(r.pid) FROM pg_stat_replication r JOIN relay_wakeup w
                    ON r.application_name = 'liverelay-wal-' || left(w.instance_id::text, 8)
                    """)
                try await h.waitUntil("SELECT bool_and(NOT reads_wal AND idle) FROM relay_wakeup")
                try await Self.write(h, "s-lost", 1)
                try await Self.delivered(h, token, 1)
                // It reconnects after a second: the row says busy again, and writes are still delivered.
                try await h.waitUntil("SELECT bool_and(reads_wal AND NOT idle) FROM relay_wakeup")
                try await Self.write(h, "s-lost", 2)
                try await Self.delivered(h, token, 2)
            }
        }
    }

    @Test("""
        a role that may not replicate: the relay wakes by NOTIFY, its row letting writers notify, and reads the log \
        once the role may, without a restart
        """)
    func roleWithoutReplication() async throws {
        // A database of its own, owned by a role without REPLICATION (the relay migrates it as that role).
        let admin = try await Blocking.run(TestCluster.newDatabase)
        let role = "lr_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let connector = try DatabaseConnector(url: admin)
        try await connector.withConnection(logger: Logger(label: "test")) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE ROLE \(role) LOGIN NOREPLICATION"),
                                       logger: Logger(label: "test"))
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(role) OWNER \(role)"),
                                       logger: Logger(label: "test"))
        }
        let url = admin.replacingOccurrences(of: "postgres@", with: "\(role)@")
            .replacingOccurrences(of: #"/t_[0-9a-f]+\?"#, with: "/\(role)?", options: .regularExpression)
        try await Harness.with(databaseURL: url) { h in
            try await h.withRelay(environment: Self.pollOff, configure: { $0.delivery.walRecheckSeconds = 0.5 }) {
                try await h.waitUntil("SELECT bool_and(idle AND NOT reads_wal) FROM relay_wakeup")
                let token = try await h.registerActivity(session: "s-plain")
                for round in 1...3 {
                    try await Self.write(h, "s-plain", round)
                    try await Self.delivered(h, token, round)
                }
                // The operator lets the role replicate: the relay's next look finds it and reads the log.
                _ = try await connector.withConnection(logger: Logger(label: "test")) { connection in
                    try await connection.query(PostgresQuery(unsafeSQL: "ALTER ROLE \(role) REPLICATION"),
                                               logger: Logger(label: "test"))
                }
                try await h.waitUntil("SELECT bool_and(reads_wal AND NOT idle) FROM relay_wakeup")
                try await Self.write(h, "s-plain", 4)
                try await Self.delivered(h, token, 4)
            }
        }
    }

    @Test("LIVERELAY_WAKEUP=notify: no replication connection; the relay's row lets writers notify it")
    func notifyOnly() async throws {
        try await Harness.with { h in
            try await h.withRelay(environment: Self.pollOff.merging(["LIVERELAY_WAKEUP": "notify"]) { $1 }) {
                try await h.waitUntil("SELECT bool_and(idle AND NOT reads_wal) FROM relay_wakeup")
                let token = try await h.registerActivity(session: "s-notify")
                try await Self.write(h, "s-notify", 1)
                try await Self.delivered(h, token, 1)
                let mine = try await h.rows("""
                    SELECT count(*)::int4 FROM pg_stat_replication r JOIN relay_wakeup w
                    ON r.application_name = 'liverelay-wal-' || left(w.instance_id::text, 8)
                    """, as: Int32.self)
                #expect(mine == [0])
            }
        }
    }
}
