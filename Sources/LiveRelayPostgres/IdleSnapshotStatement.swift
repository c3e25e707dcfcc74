import PostgresNIO

/// What `WakeupListener.writeGate` reads, in one snapshot, after this relay's row said idle: the transactions in
/// progress and whether a delivery is due. Prepared, as `GateRowStatement`.
struct IdleSnapshotStatement: PostgresPreparedStatement {
    typealias Row = (openTransactions: [String], anyDue: Bool)
    static let name = "liverelay_idle_snapshot_v1"
    static let sql = """
        SELECT ARRAY(SELECT x::text FROM pg_snapshot_xip(pg_current_snapshot()) AS x),
               EXISTS (SELECT 1 FROM delivery_outbox WHERE next_attempt_at <= statement_timestamp())
        """

    func makeBindings() throws -> PostgresBindings {
        PostgresBindings()
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        let (open, due) = try row.decode(([String], Bool).self)
        return (open, due)
    }
}
