import Foundation
import LiveRelayCore
@testable import LiveRelayPostgres
import PostgresNIO
import Testing

extension OutboxSQLTests {
    /// One claimed row as the test reads it: whether the claim holds what it belongs to, and the state it read.
    struct HeldRow: Equatable {
        var kind: String
        var name: String
        var locked: Bool
        var readState: Bool
    }

    @Test("a claim of many rows holds exactly what no other worker holds: activities, channel sides and widget tokens")
    func claimBesideAnotherWorker() async throws {
        // The claim looks each row up in the sets of what it locked (sql/040_delivery.sql); a row whose activity,
        // channel side or widget token another worker holds is claimed unlocked, and its state is not read.
        try await Harness.with { h in
            let devices = [UUID(), UUID()]
            for (n, device) in devices.enumerated() {
                try await h.sql("""
                    INSERT INTO device_registration
                        (secret_hash, device_token, bundle_id, device_uuid, widget_push_token)
                    VALUES (\(secretHash("s")), \("device-\(n)"), 'app', \(device), \("widget-\(n)"))
                    """)
            }
            for n in 0..<6 { try await h.registerActivity(session: "s\(n)", device: devices[n % 2]) }
            try await h.sql("""
                INSERT INTO broadcast_channel (name, bundle_id)
                SELECT 'channel-' || i, 'dev.liverelay.test' FROM generate_series(0, 3) i
                """)
            try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
            let connector = try DatabaseConnector(url: h.databaseURL)
            try await connector.withConnection(logger: h.logger) { other in
                try await connector.withConnection(logger: h.logger) { worker in
                    // The other worker holds two activities, one channel's side and one widget token.
                    try await other.query("BEGIN", logger: h.logger)
                    try await other.query("""
                        SELECT pg_advisory_xact_lock(hashtextextended(a.id::text, 7031))
                        FROM activity_registration a WHERE a.session_id IN ('s1', 's4');
                        """, logger: h.logger)
                    try await other.query("""
                        SELECT pg_advisory_xact_lock(hashtextextended(c.id::text || ':ios', 7032))
                        FROM broadcast_channel c WHERE c.name = 'channel-2'
                        """, logger: h.logger)
                    try await other.query(
                        "SELECT pg_advisory_xact_lock(hashtextextended('widget-1', 7033))", logger: h.logger)
                    try await worker.query("BEGIN", logger: h.logger)
                    var rows: [HeldRow] = []
                    // What it read of each row's state: the activity's, the channel's, or the widget token's
                    // registration.
                    for try await (kind, name, locked, readState) in try await worker.query("""
                        SELECT c.kind, coalesce(c.session_id, ch.name, c.device_token), c.locked,
                               c.state_id IS NOT NULL OR c.channel_state IS NOT NULL OR c.widget_registered
                        FROM liverelay_claim_deliveries(100) c
                        LEFT JOIN broadcast_channel ch ON ch.id = c.channel_id
                        """, logger: h.logger).decode((String, String, Bool, Bool).self) {
                        rows.append(HeldRow(kind: kind, name: name, locked: locked, readState: readState))
                    }
                    try await worker.query("ROLLBACK", logger: h.logger)
                    try await other.query("ROLLBACK", logger: h.logger)
                    let held: Set = ["s1", "s4", "channel-2", "widget-1"]
                    let names = [("activity", (0..<6).map { "s\($0)" }), ("channel", (0..<4).map { "channel-\($0)" }),
                                 ("widget", (0..<2).map { "widget-\($0)" })]
                    // Each row is its claim's (and its state read) exactly when the other worker does not hold it.
                    let expected = names.flatMap { kind, names in
                        names.map { HeldRow(kind: kind, name: $0, locked: !held.contains($0),
                                            readState: !held.contains($0)) }
                    }
                    let sorted = { (rows: [HeldRow]) in rows.sorted { ($0.kind, $0.name) < ($1.kind, $1.name) } }
                    #expect(sorted(rows) == sorted(expected))
                }
            }
        }
    }
}
