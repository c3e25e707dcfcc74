import APNsSimulator
import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging
import PostgresNIO
import Testing

/// Crash the relay, restart PostgreSQL, run two relays: every committed write is still delivered, in order.
@Suite("Crash recovery")
struct CrashRecoveryTests {
    @Test("SIGKILL in the middle of a burst loses no final state", .timeLimit(.minutes(5)))
    func sigkillDuringBurst() async throws {
        try await Harness.with { h in
            let sessions = (0..<50).map { "s-kill-\($0)" }
            var registered: [String: String] = [:]
            for session in sessions { registered[session] = try await h.registerActivity(session: session) }
            let tokens = registered
            let updatesPerActivity = 40
            let environment = h.relayProcessEnvironment
            var relay = try RelayProcess(arguments: ["serve"], environment: environment)
            var kills = 0
            defer { relay.stop(signal: SIGKILL) }
            let connector = try DatabaseConnector(url: h.databaseURL)
            try await connector.withConnection(logger: h.logger) { connection in
                for n in 1...updatesPerActivity {
                    for session in sessions {
                        do {
                            try await connection.query("""
                                UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                                WHERE session_id = \(session)
                                """, logger: h.logger)
                        } catch {
                            Issue.record("write failed: \(String(reflecting: error))")
                            throw error
                        }
                    }
                    if n % 10 == 0 && n < updatesPerActivity {
                        // Kill it mid-flight once pushes are flowing, and start a new one.
                        try await h.waitForPushes { !$0.isEmpty }
                        #expect(relay.stop(signal: SIGKILL) == 128 + SIGKILL)
                        kills += 1
                        relay = try RelayProcess(arguments: ["serve"], environment: environment)
                    }
                }
            }
            let pushes = try await h.waitForPushes(timeout: .seconds(60)) { pushes in
                tokens.values.allSatisfy { token in pushes.last { $0.token == token }?.n == Int64(updatesPerActivity) }
            }
            #expect(try await relay.terminate(within: .seconds(30)).status == 0,
                    "serve did not drain and exit cleanly on SIGTERM")
            for token in tokens.values {
                let order = Self.orderCheck(pushes.filter { $0.token == token })
                #expect(order.violations.isEmpty && order.stale <= kills, "out of order: \(order.violations)")
            }
            // A resend happens only for a batch in flight at a kill, which holds at most one push per activity.
            let duplicates = tokens.values.reduce(0) { total, token in
                let states = pushes.filter { $0.token == token }.compactMap(\.n)
                return total + states.count - Set(states).count
            }
            #expect(duplicates <= kills * tokens.count, "\(duplicates) resends over \(kills) kills")
            #expect(kills == 3)
        }
    }

    /// One activity's pushes, in the order the simulator took them: how many came after a newer state (`stale`), and
    /// those that break per-activity order (`violations`). A stale push is allowed only as the last push its connection
    /// carried for the activity, on a connection other than the newer state's: a request a killed relay had written
    /// before it died, which the simulator may take after its successor's newer one (neither relay can order that).
    static func orderCheck(_ pushes: [RecordedPush]) -> (stale: Int, violations: [String]) {
        var stale = 0, violations: [String] = []
        for (index, push) in pushes.enumerated() {
            guard let n = push.n, let newer = pushes[..<index].last(where: { ($0.n ?? 0) > n }) else { continue }
            stale += 1
            let laterOnItsConnection = pushes[(index + 1)...].contains { $0.connection == push.connection }
            if push.connection == nil || push.connection == newer.connection || laterOnItsConnection {
                violations.append("\(n) came after \(newer.n ?? 0), not as a killed relay's last request: "
                                  + "\(pushes.compactMap(\.n))")
            }
        }
        return (stale, violations)
    }

    @Test("the order check lets a killed relay's last request come after its successor's newer state, nothing else")
    func orderCheckRule() throws {
        func push(_ n: Int, on connection: String) throws -> RecordedPush {
            try JSONDecoder().decode(RecordedPush.self, from: Data("""
                {"sequence": 0, "token": "t", "environment": "sandbox", "apnsID": "", "providerTokenIssuedAt": 0,
                 "receivedAt": 0, "payload": {"aps": {"content-state": {"n": \(n)}}}, "connection": "\(connection)"}
                """.utf8))
        }
        let killed = Self.orderCheck(try [push(19, on: "old"), push(21, on: "new"), push(20, on: "old"),
                                          push(22, on: "new")])
        #expect(killed.stale == 1 && killed.violations.isEmpty, "the CI sequence across a SIGKILL")
        let oneConnection = Self.orderCheck(try [push(21, on: "a"), push(20, on: "a")])
        #expect(oneConnection.violations.count == 1, "an inversion on one connection")
        let wentOn = Self.orderCheck(try [push(21, on: "new"), push(20, on: "old"), push(22, on: "old")])
        #expect(wentOn.violations.count == 1, "a stale state on a connection that went on sending")
    }

    @Test("PostgreSQL restarted under a running relay: it reconnects by itself and delivers everything",
          .timeLimit(.minutes(5)))
    func postgresRestart() async throws {
        let postgres = try await Blocking.run {
            let postgres = try TestCluster.make(name: "restart")
            try postgres.createDatabase("liverelay")
            return postgres
        }
        try await Harness.with(databaseURL: postgres.url(database: "liverelay")) { h in
            try await h.withRelay {
                try await h.registerActivity(session: "s-restart")
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-restart'"#)
                try await h.waitForPushes { $0.count == 1 }
                try await Blocking.run { try postgres.restart(mode: "immediate") }
                // Writes right after the restart, while the relay is still reconnecting.
                for n in 2...20 {
                    try await h.sql("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                        WHERE session_id = 's-restart'
                        """)
                }
                let pushes = try await h.waitForPushes(timeout: .seconds(15)) { $0.last?.n == 20 }
                // Never backwards; a state may repeat once when the restart cut off the batch that sent it.
                let states = pushes.compactMap(\.n)
                #expect(zip(states, states.dropFirst()).allSatisfy { $0 <= $1 }, "\(states)")
                // Keep working after recovery, with the wake-up path (not only the poll).
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 21}' WHERE session_id = 's-restart'"#)
                try await h.waitForPushes(timeout: .seconds(5)) { $0.last?.n == 21 }
            }
        }
    }

    @Test("two relays on one database share the work without duplicates and keep per-activity order",
          .timeLimit(.minutes(5)))
    func twoRelaysShareWork() async throws {
        try await Harness.with { h in
            let sessions = (0..<20).map { "s-two-\($0)" }
            var registered: [String: String] = [:]
            for session in sessions { registered[session] = try await h.registerActivity(session: session) }
            let tokens = registered
            try await h.withRelay {
                try await h.withRelay {
                    try await h.withConnection { connection in
                        for n in 1...50 {
                            for session in sessions {
                                try await connection.query("""
                                    UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                                    WHERE session_id = \(session)
                                    """, logger: h.logger)
                            }
                        }
                    }
                    let pushes = try await h.waitForPushes(timeout: .seconds(40)) { pushes in
                        tokens.values.allSatisfy { token in pushes.last { $0.token == token }?.n == 50 }
                    }
                    for token in tokens.values {
                        let states = pushes.filter { $0.token == token }.compactMap(\.n)
                        #expect(zip(states, states.dropFirst()).allSatisfy { $0 < $1 }, "order or duplicate: \(states)")
                    }
                }
            }
        }
    }

    @Test("a claim that got an activity's lock late reads the state committed while it waited, not an older one")
    func claimReadsStateAfterTakingLocks() async throws {
        // The race behind it: relay B's claim statement starts (its snapshot), relay A sends a newer state and
        // releases the activity's lock, then B's statement takes the lock. B must build from A's state, not older.
        try await Harness.with { h in
            _ = try await h.registerActivity(session: "s-late-lock", state: #"{"n": 1}"#)
            let id = try #require(
                try await h.rows("SELECT id FROM activity_registration WHERE session_id = 's-late-lock'", as: UUID.self)
                    .first)
            try await h.withConnection { holder in
                try await holder.query("BEGIN", logger: h.logger)
                try await holder.query("SELECT pg_advisory_xact_lock(4242)", logger: h.logger)
                async let late: [String] = h.rows("""
                    SELECT f.content_state || ' ' || p.content_state::text
                    FROM (SELECT pg_advisory_xact_lock(4242)) waited
                    CROSS JOIN liverelay_claim_deliveries(10) f
                    CROSS JOIN (SELECT content_state FROM activity_registration WHERE id = \(id)) p
                    WHERE f.locked
                    """, as: String.self)
                // The statement above has its snapshot and is waiting for the lock.
                try await h.waitUntil("""
                    SELECT count(*) = 1 FROM pg_stat_activity
                    WHERE wait_event = 'advisory' AND datname = current_database()
                    """)
                try await holder.query(
                    #"UPDATE activity_registration SET content_state = '{"n": 2}' WHERE session_id = 's-late-lock'"#,
                                       logger: h.logger)
                try await holder.query("COMMIT", logger: h.logger)
                // The claim (its row, and the state beside it) sees n = 2, written while the statement waited; the
                // statement's own snapshot (the plain subquery) still sees n = 1.
                #expect(try await late == [#"{"n": 2} {"n": 1}"#])
            }
        }
    }
}
