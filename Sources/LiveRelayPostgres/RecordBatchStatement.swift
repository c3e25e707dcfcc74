import PostgresNIO

/// The record of a batch without channel outcomes, the common one (`OutboxStore.record`), as a prepared statement:
/// planned once per connection where the text was parsed and planned at every batch, once per write at B1's pace
/// (pgbench, hot: 0.144-0.145 ms a call as text, 0.105-0.117 prepared). Its text is the one `RecordCall` writes for
/// such a batch, so the call's shape has one source.
struct RecordBatchStatement: PostgresPreparedStatement {
    typealias Row = Int32
    static let name = "liverelay_record_batch_v1"
    static let sql = RecordCall.text(withChannels: false)
    /// `RecordCall.query`'s bindings for the batch.
    var bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings {
        bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Int32 {
        try row.decode(Int32.self)
    }
}
