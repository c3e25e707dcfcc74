import PostgresNIO

/// The hub's read of the log after its cursor, with the snapshot it was read in (`BroadcastHub.poll`). A prepared
/// statement: planned once per connection, where a query sent as text was parsed and planned at every read, and with
/// a stream open the hub reads once per write (~35 µs of PostgreSQL's time a read, measured hot with pgbench).
struct LogReadStatement: PostgresPreparedStatement {
    typealias Row = (snapshotXmin: Int64, snapshotXmax: Int64, sequence: Int64?, channels: [String]?, event: String?,
                     data: String?)
    static let name = "liverelay_log_read_v1"
    static let sql = """
        SELECT pg_snapshot_xmin(s.snap)::text::int8, pg_snapshot_xmax(s.snap)::text::int8,
               b.seq, b.channels, b.event, b.data::text
        FROM (SELECT pg_current_snapshot() AS snap) s
        LEFT JOIN LATERAL (SELECT seq, channels, event, data FROM broadcast_log WHERE seq > $1::int8
                           ORDER BY seq LIMIT $2::int8) b ON true
        """
    var cursor: Int64
    var limit: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(cursor)
        bindings.append(limit)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode((Int64, Int64, Int64?, [String]?, String?, String?).self)
    }
}
