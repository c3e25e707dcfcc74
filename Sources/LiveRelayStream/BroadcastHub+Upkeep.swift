import PostgresNIO

extension BroadcastHub {
    /// Deletes the log's events older than `retention`.
    func prune(on connection: PostgresConnection) async throws {
        let seconds = retention.components.seconds
        try await connection.query(
            "SELECT liverelay_prune_broadcast_log(make_interval(secs => \(Double(seconds))))", logger: logger)
    }
}
