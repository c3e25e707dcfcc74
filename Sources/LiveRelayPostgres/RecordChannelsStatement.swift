import PostgresNIO

/// The record of a batch with channel outcomes (`OutboxStore.record`): `liverelay_record_batch(...)` and
/// `liverelay_record_channels(...)` in one statement, prepared as `RecordBatchStatement` is, since its text is the
/// same for every such batch. Its text is the one `RecordCall` writes, so the call's shape has one source.
struct RecordChannelsStatement: PostgresPreparedStatement {
    /// Webhook rows queued, channel rows queued.
    typealias Row = (Int32, Int32)
    static let name = "liverelay_record_channels_v1"
    static let sql = RecordCall.text(withChannels: true)
    /// `RecordCall.query`'s bindings for the batch and its channels.
    var bindings: PostgresBindings

    func makeBindings() throws -> PostgresBindings {
        bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> (Int32, Int32) {
        try row.decode((Int32, Int32).self)
    }
}
