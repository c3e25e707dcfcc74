import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle

/// Ends activities older than Apple shows them (`LIVERELAY_ACTIVITY_MAX_AGE`, since their last start) with an `end`
/// push and a `live_activity.stale` event. Every relay runs one; the statement's row locks make each activity end
/// once, whichever relay gets there (`liverelay_sweep_stale` in sql/035_lifecycle.sql). It also removes the events of
/// deleted webhook endpoints that nothing else did (`liverelay_drop_orphan_webhooks`).
public final class ActivitySweeper: Service, Sendable {
    private let connector: DatabaseConnector
    private let maximumAgeSeconds: Double
    private let logger: Logger

    public init(connector: DatabaseConnector, maximumAgeSeconds: Double, logger: Logger) {
        self.connector = connector
        self.maximumAgeSeconds = maximumAgeSeconds
        self.logger = logger
    }

    /// How often to look: a tenth of the age limit, between 1 s and 30 s.
    public var interval: Duration {
        .milliseconds(Int64(min(max(maximumAgeSeconds / 10, 1), 30) * 1000))
    }

    public func run() async throws {
        await connector.runPeriodically(
            role: "activity sweeper", every: interval, deadline: .seconds(60), what: "sweeping", logger: logger
        ) { connection in
            try await self.sweep(on: connection)
        }
        logger.debug("activity sweeper stopped")
    }

    /// Ends what is due, 500 at a time; removes events a deleted webhook endpoint left behind.
    func sweep(on connection: PostgresConnection) async throws {
        try await connection.query("SELECT liverelay_drop_orphan_webhooks(1000)", logger: logger)
        while true {
            var ended: Int32 = 0
            let query: PostgresQuery = "SELECT liverelay_sweep_stale(\(maximumAgeSeconds), 500)"
            for try await count in try await connection.query(query, logger: logger).decode(Int32.self) {
                ended = count
            }
            if ended > 0 {
                logger.info("ended activities past the age limit", metadata: ["count": "\(ended)"])
            }
            if ended < 500 { return }
        }
    }
}
