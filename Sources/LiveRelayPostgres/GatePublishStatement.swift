import Foundation
import PostgresNIO

/// Writes this relay's `relay_wakeup` row and, when it says idle, reads what follows its commit
/// (`liverelay_publish_gate`, sql/021_wakeup_gate.sql; `WakeupListener.writeGate` says when an idle write is
/// skipped). Prepared: the listener runs it after every batch that drained the queue (once per write at B1's pace).
/// One call where the write and the snapshot after its commit were two prepared statements (pgbench, hot: 0.119-0.139
/// ms for the two, 0.063-0.074 for the call).
struct GatePublishStatement: PostgresPreparedStatement {
    /// Whether the row was written; if written idle, the transactions in progress just after and whether a delivery
    /// is due.
    typealias Row = (written: Bool, openTransactions: [String], anyDue: Bool)
    static let name = "liverelay_publish_gate_v1"
    static let sql = "CALL liverelay_publish_gate($1::uuid, $2::bool, $3::bool, $4::bool, NULL, NULL, NULL)"
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

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode((Bool, [String], Bool).self)
    }
}
