import Foundation
import LiveRelayCore
import LiveRelayPostgres
import LiveRelayStore
import PostgresNIO
import Testing

/// An API or MCP write to an activity whose row changes between the store's lookup and its write (a relay marks the
/// token dead, a writer ends it): the answer says what the row became, as it does when the lookup already sees it.
@Suite("Activity writes racing a change of status")
struct ActivityWriteRaceTests {
    enum Write: String, CaseIterable, Sendable { case update, end }

    @Test("a write that finds its activity ended or invalidated meanwhile is a conflict naming the status",
          arguments: Write.allCases)
    func changedMeanwhile(_ write: Write) async throws {
        try await Harness.with { h in
            try await h.registerActivity(session: "race")
            let id = try #require(
                try await h.rows("SELECT id FROM activity_registration WHERE session_id = 'race'", as: UUID.self).first)
            let becomes = write == .update ? "invalidated" : "ended"
            let connector = try DatabaseConnector(url: h.databaseURL)
            let pool = PostgresClient(configuration: connector.clientConfiguration, backgroundLogger: h.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await pool.run() }
                let store = RelayStore(client: pool, logger: h.logger)
                try await connector.withConnection(logger: h.logger) { other in
                    // Another session changes the row's status and holds the row until it commits.
                    try await other.query("BEGIN", logger: h.logger)
                    try await other.query(
                        "UPDATE activity_registration SET status = \(becomes) WHERE id = \(id)", logger: h.logger)
                    let attempt = Task {
                        switch write {
                        case .update:
                            _ = try await store.updateActivity(
                                .id(id), LiveActivityUpdate(contentState: .object(["n": .integer(1)])))
                        case .end:
                            _ = try await store.endActivity(.id(id))
                        }
                    }
                    // The store has read the row as active, and its write waits for the row.
                    try await h.waitUntil("""
                        SELECT EXISTS (SELECT FROM pg_stat_activity
                                       WHERE wait_event_type = 'Lock'
                                         AND (query LIKE 'WITH a AS (%' OR query LIKE '%FOR UPDATE'))
                        """)
                    try await other.query("COMMIT", logger: h.logger)
                    let outcome = await attempt.result
                    let said = "the live activity \(id.uuidString.lowercased()) is \(becomes), not active"
                    #expect(throws: StoreError.conflict(said)) { try outcome.get() }
                }
                group.cancelAll()
            }
            let status = try await h.rows("SELECT status FROM activity_registration WHERE id = \(id)", as: String.self)
            #expect(status == [becomes])
        }
    }
}
