import Foundation
import PostgresNIO

/// What health probes and metrics read: cheap counts that never scan a large table.
extension RelayStore {
    /// Registered devices and delivery-log rows, as the original relay's `/health` reports them. A table is counted
    /// exactly while it is small and estimated from the planner's statistics beyond 100,000 rows.
    public func healthCounts() async throws -> (devices: Int64, deliveries: Int64) {
        try await withConnection { [logger] connection in
            var counts: (Int64, Int64) = (0, 0)
            for try await row in try await connection.query("""
                SELECT CASE WHEN d.reltuples < 100000 THEN (SELECT count(*) FROM device_registration)
                            ELSE d.reltuples END::int8,
                       CASE WHEN l.reltuples < 100000 THEN (SELECT count(*) FROM delivery_log)
                            ELSE l.reltuples END::int8
                FROM pg_class d, pg_class l
                WHERE d.oid = 'device_registration'::regclass AND l.oid = 'delivery_log'::regclass
                """, logger: logger).decode((Int64, Int64).self) { counts = row }
            return counts
        }
    }

    /// Rows waiting in the outbox.
    public func queueDepth() async throws -> Int64 {
        try await values("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self).first ?? 0
    }
}
