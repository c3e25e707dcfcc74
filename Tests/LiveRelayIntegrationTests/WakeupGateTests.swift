import APNsSimulator
import Foundation
@testable import LiveRelayPostgres
import PostgresNIO
import Testing

/// The writers' side of the wake-up gate (sql/020_triggers.sql), observed through `relay_wakeup` inside one writer
/// transaction, with no relay running; and the relay's side, with it waking by NOTIFY only.
@Suite("Wake-up gate")
struct WakeupGateTests {
    /// A one-minute poll, and wake-ups by NOTIFY only: the relay does not read the write-ahead log, which would see
    /// every commit whatever the gate says (WALWakeupTests).
    static let gateOnly = ["LIVERELAY_POLL_INTERVAL_MS": "60000", "LIVERELAY_WAKEUP": "notify"]

    @Test("a transaction wakes an idle relay once; one that found it busy looks again in its next statement")
    func oncePerTransactionAfterWaking() async throws {
        try await Harness.with { h in
            for i in 1...2 { _ = try await h.registerActivity(session: "s-gate-\(i)", state: #"{"n": 0}"#) }
            let relay = UUID()
            try await h.withConnection { writer in
                func idle() async throws -> Bool {
                    try await writer.query(
                        "SELECT idle FROM relay_wakeup WHERE instance_id = \(relay)", logger: h.logger
                    ).collect().first!.decode(Bool.self)
                }
                // What the relay does when it has drained the outbox (here from inside the writer's transaction).
                func relayTurnsIdle() async throws {
                    try await writer.query(
                        "UPDATE relay_wakeup SET idle = true WHERE instance_id = \(relay)", logger: h.logger)
                }
                func write(_ session: String, _ n: Int) async throws {
                    try await writer.query("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                        WHERE session_id = \(session)
                        """, logger: h.logger)
                }
                // The relay is busy: the first statement does not wake it (and does not stop looking).
                try await h.sql("INSERT INTO relay_wakeup (instance_id, idle) VALUES (\(relay), false)")
                try await writer.query("BEGIN", logger: h.logger)
                try await write("s-gate-1", 1)
                #expect(try await idle() == false)
                // It turns idle before this transaction commits: the next statement wakes it (marks it busy).
                try await relayTurnsIdle()
                try await write("s-gate-2", 1)
                #expect(try await idle() == false)
                // Woken once: a later statement of the same transaction leaves the gate alone.
                try await relayTurnsIdle()
                try await write("s-gate-1", 2)
                #expect(try await idle() == true)
                try await writer.query("COMMIT", logger: h.logger)
                // The flag ended with the transaction: the next one wakes the relay again.
                try await write("s-gate-2", 2)
                #expect(try await idle() == false)
            }
        }
    }

    @Test("a writer that commits asynchronously notifies a relay that reads the log; a durable writer does not")
    func asynchronousWriterNotifiesLogReader() async throws {
        try await Harness.with { h in
            _ = try await h.registerActivity(session: "s-async", state: #"{"n": 0}"#)
            // A relay that reads the write-ahead log: its row says busy (sql/020_triggers.sql, liverelay_wake).
            try await h.sql("""
                INSERT INTO relay_wakeup (instance_id, idle, reads_wal) VALUES (gen_random_uuid(), false, true)
                """)
            let heard = try await h.wakeUpNotifications {
                try await h.withConnection { writer in
                    try await writer.query("SET synchronous_commit = on", logger: h.logger)
                    try await writer.query("""
                        UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-async'
                        """, logger: h.logger)
                    try await writer.query("SET synchronous_commit = off", logger: h.logger)
                    try await writer.query("""
                        UPDATE activity_registration SET content_state = '{"n": 2}' WHERE session_id = 's-async'
                        """, logger: h.logger)
                }
            }
            #expect(heard.count == 1, "one notification, the asynchronous writer's: \(heard)")
        }
    }

    @Test("""
        the relay's idle write (liverelay_publish_gate) reports the writers still open and a due delivery; it leaves a \
        row a writer marked busy since
        """)
    func publishIdle() async throws {
        try await Harness.with { h in
            _ = try await h.registerActivity(session: "s-publish", state: #"{"n": 0}"#)
            let relay = UUID()
            try await h.withConnection { listener in
                // The prepared statement the listener sends.
                func publish(idle: Bool, knowing: Bool, believed: Bool) async throws -> GatePublishStatement.Row {
                    let statement = GatePublishStatement(instanceID: relay, idle: idle, knowingRow: knowing,
                                                         believedIdle: believed)
                    var rows: [GatePublishStatement.Row] = []
                    for try await row in try await listener.execute(statement, logger: h.logger) { rows.append(row) }
                    return try #require(rows.first)
                }
                try await h.withConnection { writer in
                    try await writer.query("BEGIN", logger: h.logger)
                    let xid = try await writer.query("SELECT pg_current_xact_id()::text", logger: h.logger)
                        .collect().first!.decode(String.self)
                    // Written idle: the open writer comes back; nothing is due.
                    let idle = try await publish(idle: true, knowing: false, believed: false)
                    #expect(idle.0 && idle.1.contains(xid) && !idle.2, "\(idle)")
                    // Written busy: no look (a busy relay looks until it finds nothing anyway).
                    let busy = try await publish(idle: false, knowing: true, believed: true)
                    #expect(busy.0 && busy.1.isEmpty && !busy.2, "\(busy)")
                    try await writer.query("ROLLBACK", logger: h.logger)
                }
                // A writer marks the row busy after the relay believed it idle: the idle write leaves it.
                try await h.sql("UPDATE relay_wakeup SET idle = false WHERE instance_id = \(relay)")
                let skipped = try await publish(idle: true, knowing: true, believed: true)
                #expect(!skipped.0 && skipped.1.isEmpty, "\(skipped)")
                #expect(try await h.rows("SELECT idle FROM relay_wakeup WHERE instance_id = \(relay)",
                                         as: Bool.self) == [false])
                // A write queues a delivery (no relay runs): the next idle write reports it due.
                try await h.sql("""
                    UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-publish'
                    """)
                let due = try await publish(idle: true, knowing: false, believed: false)
                #expect(due.0 && due.2, "\(due)")
            }
        }
    }

    @Test("""
        a writer that read 'busy' and committed while the relay sent is delivered when it turns idle, not by the poll
        """)
    func commitWhileBusy() async throws {
        try await Harness.with { h in
            // A one-minute poll: only the relay's look when it turns idle can deliver within the time allowed.
            try await h.withRelay(environment: Self.gateOnly) {
                let (busy, slow) = try await Self.slowAPNs(h)
                var exercised = false
                for n in 1...5 where !exercised {
                    try await Self.writeWhileBusy(h, n) { writer, woke in
                        // It read "busy" (not woken): committed now, while the relay waits for APNs, it is not
                        // among the writers open when the relay says idle, and it does not notify.
                        _ = try await writer.query("COMMIT", logger: h.logger)
                        let stillBusy = try await writer.query(
                            "SELECT NOT bool_or(idle) FROM relay_wakeup", logger: h.logger
                        ).collect().first!.decode(Bool.self)
                        exercised = !woke && stillBusy
                    }
                    let pushes = try await h.waitForPushes(timeout: .seconds(10)) {
                        $0.contains { $0.token == slow && $0.n == Int64(n) }
                    }
                    #expect(pushes.contains { $0.token == busy && $0.n == Int64(n) })
                }
                #expect(exercised, "no writer read 'busy' and committed while the relay sent, in five tries")
            }
        }
    }

    @Test("a writer that read 'busy' and commits long after the relay turned idle is delivered without the poll")
    func slowCommitAfterIdle() async throws {
        try await Harness.with { h in
            // A one-minute poll: only the gate can deliver within the time allowed.
            try await h.withRelay(environment: Self.gateOnly) {
                let (busy, slow) = try await Self.slowAPNs(h)
                var exercised = false
                for n in 1...5 where !exercised {
                    try await Self.writeWhileBusy(h, n) { writer, woke in
                        // A loaded machine may have let the relay say idle in between: this writer then woke it
                        // (and holds its row until it commits); try again.
                        guard !woke else {
                            _ = try await writer.query("COMMIT", logger: h.logger)
                            return
                        }
                        // It read "busy", so it will not notify; the relay finishes, says idle and finds nothing.
                        try await h.waitForPushes { $0.contains { $0.token == busy && $0.n == Int64(n) } }
                        try await h.waitUntil("SELECT bool_and(idle) FROM relay_wakeup")
                        // Deliberately late: well after the relay's own look at the moment it said idle, so only
                        // following this open transaction can find its row.
                        try await Task.sleep(for: .milliseconds(500))
                        try await writer.query("COMMIT", logger: h.logger)
                        exercised = true
                    }
                    let pushes = try await h.waitForPushes(timeout: .seconds(10)) {
                        $0.contains { $0.token == slow && $0.n == Int64(n) }
                    }
                    #expect(pushes.last { $0.token == slow }?.n == Int64(n))
                }
                #expect(exercised, "no writer read 'busy' in five tries")
            }
        }
    }

    /// s-busy and s-slow registered, and APNs holding every answer for a second (a relay sending s-busy stays busy).
    static func slowAPNs(_ h: Harness) async throws -> (busy: String, slow: String) {
        let busy = try await h.registerActivity(session: "s-busy")
        let slow = try await h.registerActivity(session: "s-slow")
        var faults = SimulatorFaults()
        faults.delayMilliseconds = 1000
        h.simulator.setFaults(faults)
        return (busy, slow)
    }

    /// Writes `n` to s-busy and waits until the relay is busy sending it; then, in a writer's open transaction, writes
    /// `n` to s-slow and hands `rest` that writer and whether it woke the relay (it did not when it read "busy").
    static func writeWhileBusy(
        _ h: Harness, _ n: Int, rest: (PostgresConnection, Bool) async throws -> Void
    ) async throws {
        try await h.sql("""
            UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n)) WHERE session_id = 's-busy'
            """)
        do {
            try await h.waitUntil("SELECT NOT bool_or(idle) FROM relay_wakeup")
        } catch is Harness.TimedOut {
            Issue.record("the relay never said busy after s-busy's write \(n): \(try await Self.gateState(h))")
            throw Harness.TimedOut()
        }
        try await h.withConnection { writer in
            try await writer.query("BEGIN", logger: h.logger)
            try await writer.query("""
                UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                WHERE session_id = 's-slow'
                """, logger: h.logger)
            let woke = try await writer.query(
                "SELECT current_setting('liverelay.woken', true) IS NOT DISTINCT FROM 'yes'", logger: h.logger
            ).collect().first!.decode(Bool.self)
            try await rest(writer, woke)
        }
    }

    /// What the gate, the queue and the two activities say, for a failure's message.
    static func gateState(_ h: Harness) async throws -> String {
        let gate = try await h.rows("""
            SELECT format('%s idle=%s age=%s', instance_id, idle, now() - updated_at) FROM relay_wakeup
            """, as: String.self)
        let queue = try await h.rows("""
            SELECT format('outbox row %s: %s attempts=%s due in %s error=%s', id, session_id, attempts,
                          next_attempt_at - now(), last_error) FROM delivery_outbox
            """, as: String.self)
        let activities = try await h.rows("""
            SELECT format('%s %s %s', session_id, status, content_state) FROM activity_registration
            """, as: String.self)
        return "gate \(gate); \(queue.isEmpty ? "outbox empty" : queue.joined(separator: "; ")); \(activities)"
    }
}
