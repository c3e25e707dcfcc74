import Foundation
import LiveRelayCore
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

    /// Rows waiting in the outboxes, and the oldest one's age: the lowest id's row, read through the primary key; for
    /// webhooks, of the enabled endpoints only, read through each one's index (a paused endpoint's events wait by
    /// choice, and an alert on their age would fire for a pause).
    public func outboxGauges() async throws -> OutboxGauges {
        try await withConnection { [logger] connection in
            var gauges = OutboxGauges.unreadable
            for try await (deliveries, oldestDelivery, events, oldestEvent) in try await connection.query("""
                SELECT (SELECT count(*) FROM delivery_outbox)::int8,
                       greatest(0, extract(epoch FROM now() - (SELECT enqueued_at FROM delivery_outbox
                                                               ORDER BY id LIMIT 1)))::float8,
                       (SELECT count(*) FROM webhook_outbox)::int8,
                       greatest(0, extract(epoch FROM now() - (
                           SELECT min(w.oldest) FROM webhook_endpoint e CROSS JOIN LATERAL
                               (SELECT min(o.enqueued_at) AS oldest FROM webhook_outbox o
                                WHERE o.endpoint_id = e.id) w
                           WHERE e.enabled)))::float8
                """, logger: logger).decode((Int64, Double?, Int64, Double?).self) {
                gauges = OutboxGauges(
                    deliveries: Int(deliveries), oldestDeliverySeconds: oldestDelivery ?? 0,
                    webhookEvents: Int(events), oldestWebhookEventSeconds: oldestEvent ?? 0)
            }
            return gauges
        }
    }
}
