import Logging
import LiveRelayWAL
import PostgresNIO

/// What decides whether the relay may wake from the write-ahead log, read in one statement: the watched tables'
/// files, and the server's settings. `unusable` says why not, in words for the operator's log.
struct WALWakeupSettings: Sendable, Equatable {
    var watched: WALScanner.Watched
    var segmentSize: LSN
    var serverVersion: Int
    var synchronousStandbys: String
    var mayReplicate: Bool
    var blockSize: Int
    var walSenders: Int

    /// The settings no longer allow reading the log.
    struct Change: Error {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Why the log cannot be read, or nil when it can.
    var unusable: String? {
        if !(150_000..<180_000).contains(serverVersion) {
            return "PostgreSQL \(serverVersion / 10_000) writes a WAL this relay does not read (it reads 15 to 17)"
        }
        if !mayReplicate {
            return "the database role may not replicate (ALTER ROLE … REPLICATION lets it read the write-ahead log)"
        }
        if walSenders == 0 { return "max_wal_senders is 0" }
        if !synchronousStandbys.isEmpty {
            // A replication connection could be taken for a synchronous standby, and hold every commit back.
            return "synchronous_standby_names is set (\(synchronousStandbys))"
        }
        if blockSize != 8192 { return "wal_block_size is \(blockSize), not 8192" }
        return nil
    }

    static let query: PostgresQuery = """
        SELECT pg_relation_filenode('delivery_outbox')::int8, pg_relation_filenode('broadcast_log')::int8,
               (SELECT oid FROM pg_database WHERE datname = current_database())::int8,
               (SELECT setting::int8 FROM pg_settings WHERE name = 'wal_segment_size'),
               current_setting('server_version_num')::int4, current_setting('synchronous_standby_names'),
               coalesce((SELECT rolsuper OR rolreplication FROM pg_roles WHERE rolname = current_user), false),
               current_setting('wal_block_size')::int4, current_setting('max_wal_senders')::int4
        """

    static func read(on connection: PostgresConnection, logger: Logger) async throws -> WALWakeupSettings {
        let rows = try await connection.query(query, logger: logger)
        for try await (outbox, log, database, segment, version, standbys, replicate, block, senders) in rows.decode(
            (Int64, Int64, Int64, Int64, Int, String, Bool, Int, Int).self)
        {
            return WALWakeupSettings(
                watched: .init(database: UInt32(truncatingIfNeeded: database),
                               outbox: UInt32(truncatingIfNeeded: outbox), log: UInt32(truncatingIfNeeded: log)),
                segmentSize: LSN(segment), serverVersion: version, synchronousStandbys: standbys,
                mayReplicate: replicate, blockSize: block, walSenders: senders)
        }
        throw WALWakeupSettings.Change("the WAL settings could not be read")
    }
}
