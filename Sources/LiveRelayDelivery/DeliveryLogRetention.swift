import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle

/// Deletes `delivery_log` rows older than `LIVERELAY_DELIVERY_LOG_RETENTION` (30 days by default), so the log of
/// every push ever sent does not grow without end. Every relay runs one; each statement deletes a batch in a
/// transaction of its own and passes over rows another relay's prune holds (`liverelay_prune_delivery_log` in
/// sql/043_delivery_log_retention.sql).
public final class DeliveryLogRetention: Service, Sendable {
    private let connector: DatabaseConnector
    private let keepSeconds: Double
    private let interval: Duration
    private let batch: Int
    private let logger: Logger

    /// - Parameters:
    ///   - keepSeconds: how old a row may grow.
    ///   - interval: how often to prune (first after one interval).
    ///   - batch: rows one statement deletes; a prune repeats it until fewer come back.
    public init(connector: DatabaseConnector, keepSeconds: Double, interval: Duration = .seconds(600),
                batch: Int = 5_000, logger: Logger) {
        self.connector = connector
        self.keepSeconds = keepSeconds
        self.interval = interval
        self.batch = batch
        self.logger = logger
    }

    public func run() async throws {
        await connector.runPeriodically(
            role: "delivery log retention", every: interval, deadline: .seconds(300), what: "pruning the delivery log",
            logger: logger
        ) { connection in
            _ = try await self.prune(on: connection)
        }
        logger.debug("delivery log retention stopped")
    }

    /// Deletes every row past the retention, `batch` at a time; returns how many it deleted.
    func prune(on connection: PostgresConnection) async throws -> Int {
        var total = 0
        while !Task.isCancelled {
            var deleted = 0
            let query: PostgresQuery = """
                SELECT liverelay_prune_delivery_log(make_interval(secs => \(keepSeconds)), \(Int32(batch)))
                """
            for try await count in try await connection.query(query, logger: logger).decode(Int32.self) {
                deleted = Int(count)
            }
            total += deleted
            if deleted < batch { break }
        }
        if total > 0 {
            logger.info("pruned the delivery log", metadata: ["rows": "\(total)", "older than": "\(keepSeconds) s"])
        }
        return total
    }
}
