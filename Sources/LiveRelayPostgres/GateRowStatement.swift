import Foundation
import PostgresNIO

/// Writes this relay's `relay_wakeup` row (`WakeupListener.writeGate`, which says when an idle write is skipped); a
/// row comes back when it was written. Prepared: the listener writes the row after every batch that drained the queue
/// (once per write at B1's pace), and sent as text the statement was parsed and planned every time (pgbench, hot:
/// 0.109 ms as text, 0.071-0.077 prepared; the snapshot that follows, `IdleSnapshotStatement`, 0.107-0.110 and
/// 0.060-0.067).
struct GateRowStatement: PostgresPreparedStatement {
    typealias Row = Bool
    static let name = "liverelay_gate_row_v1"
    static let sql = """
        INSERT INTO relay_wakeup (instance_id, idle, updated_at) VALUES ($1::uuid, $2::bool, now())
        ON CONFLICT (instance_id) DO UPDATE SET idle = excluded.idle, updated_at = excluded.updated_at
        WHERE NOT excluded.idle OR NOT $3::bool OR relay_wakeup.idle = $4::bool
        RETURNING true
        """
    var instanceID: UUID
    var idle: Bool
    var knowingRow: Bool
    var believedIdle: Bool

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(instanceID)
        bindings.append(idle)
        bindings.append(knowingRow)
        bindings.append(believedIdle)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Bool {
        try row.decode(Bool.self)
    }
}
