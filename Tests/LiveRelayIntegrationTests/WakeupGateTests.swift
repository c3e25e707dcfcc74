import Foundation
import PostgresNIO
import Testing

/// The writers' side of the wake-up gate (sql/020_triggers.sql), observed through `relay_wakeup` inside one writer
/// transaction, with no relay running.
@Suite("Wake-up gate")
struct WakeupGateTests {
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
}
