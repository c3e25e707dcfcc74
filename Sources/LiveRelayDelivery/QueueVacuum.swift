import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle

/// Vacuums a delivery queue as soon as a drained backlog has left it mostly dead rows, rather than when autovacuum
/// next comes (up to a minute or more): until then every general claim reads past those rows at the head of the due
/// index (`liverelay_queues_to_vacuum` in sql/047_queue_upkeep.sql). Every relay runs one; `SKIP_LOCKED` lets a relay
/// pass over a queue another one is vacuuming.
public final class QueueVacuum: Service, Sendable {
    /// The tables it may vacuum: a statement names its table, so only these names are ever written into one.
    public enum Queue: String, Sendable, CaseIterable {
        case deliveries = "delivery_outbox"
        case webhooks = "webhook_outbox"
    }

    private let connector: DatabaseConnector
    private let interval: Duration
    private let minimumDeadRows: Int64
    private let quiet: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - interval: how often to look (one read of PostgreSQL's table statistics, which lag by about a second).
    ///   - minimumDeadRows: fewer dead rows cost a claim too little to be worth a vacuum.
    ///   - quiet: no queue is vacuumed again sooner than this after its last vacuum (by any relay, or autovacuum).
    public init(connector: DatabaseConnector, interval: Duration = .seconds(2), minimumDeadRows: Int64 = 10_000,
                quiet: Duration = .seconds(10), logger: Logger) {
        self.connector = connector
        self.interval = interval
        self.minimumDeadRows = minimumDeadRows
        self.quiet = quiet
        self.logger = logger
    }

    public func run() async throws {
        await connector.runPeriodically(
            role: "queue vacuum", every: interval, deadline: .seconds(120), what: "vacuuming a queue", logger: logger
        ) { connection in
            _ = try await self.vacuumWhatIsDue(on: connection)
        }
        logger.debug("queue vacuum stopped")
    }

    /// Vacuums each queue that holds mostly dead rows; returns those it vacuumed.
    func vacuumWhatIsDue(on connection: PostgresConnection) async throws -> [Queue] {
        var due: [Queue] = []
        for try await name in try await connection.query(
            "SELECT liverelay_queues_to_vacuum(\(minimumDeadRows), \(Double(quiet.components.seconds)))",
            logger: logger
        ).decode(String.self) {
            if let queue = Queue(rawValue: name) { due.append(queue) }
        }
        for queue in due {
            // Outside any transaction (VACUUM refuses one); the name is one of `Queue`'s. The dead index entries are
            // what costs the claims, so their cleanup is asked for, never skipped; the file is not truncated, which
            // would take the table's exclusive lock (writers and claims wait behind it) for pages the queue's next
            // burst fills again.
            let statement = "VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false) \(queue.rawValue)"
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
            logger.debug("vacuumed a drained queue", metadata: ["table": "\(queue.rawValue)"])
        }
        return due
    }
}
