import Foundation
import LiveRelayCore
import PostgresNIO

/// Which rows of `delivery_log` to list.
public struct DeliveryFilter: Sendable {
    public var sessionID: String?
    public var activityID: UUID?
    public var status: DeliveryStatus?
    public var transport: LoggedTransport?
    public var limit = 50

    public init(sessionID: String? = nil, activityID: UUID? = nil, status: DeliveryStatus? = nil,
                transport: LoggedTransport? = nil, limit: Int = 50) {
        self.sessionID = sessionID
        self.activityID = activityID
        self.status = status
        self.transport = transport
        self.limit = limit
    }
}

/// The queue and the rate of sends, for the dashboard's chart.
public struct QueueSnapshot: Codable, Sendable, Equatable {
    public var queued: Int
    public var due: Int
    public var retrying: Int
    public var oldest_seconds: Double
    /// Sent and failed deliveries per 10-second bucket over the last 5 minutes, oldest first (30 buckets).
    public var sent_per_bucket: [Int]
    public var failed_per_bucket: [Int]
    public var bucket_seconds: Int
}

extension RelayStore {
    /// Deliveries newest first (of the last 24 hours).
    public func deliveries(_ filter: DeliveryFilter) async throws -> [DeliveryRecord] {
        try Self.check(limit: filter.limit, range: 1...500)
        let status = filter.status?.rawValue, transport = filter.transport?.rawValue
        return try await records("""
            SELECT json_build_object('id', id, 'created_at', created_at, 'status', status, 'event_type', event_type,
                'session_id', session_id, 'activity_id', activity_id, 'channel', channel, 'transport', transport,
                'push_type', push_type,
                'token_suffix', token_suffix, 'provider_status', provider_status, 'provider_reason', provider_reason,
                'attempt', attempt, 'latency_ms', latency_ms, 'error', error, 'priority', priority,
                'priority_reason', priority_reason, 'event_id', event_id)::text
            FROM delivery_log
            WHERE created_at > now() - interval '24 hours'
              AND (\(filter.sessionID)::text IS NULL OR session_id = \(filter.sessionID))
              AND (\(filter.activityID)::uuid IS NULL OR activity_id = \(filter.activityID))
              AND (\(status)::text IS NULL OR status = \(status))
              AND (\(transport)::text IS NULL OR transport = \(transport))
            ORDER BY id DESC LIMIT \(filter.limit)
            """, as: DeliveryRecord.self)
    }

    public func queueSnapshot() async throws -> QueueSnapshot {
        guard let text = try await values("""
            WITH buckets AS (
                SELECT b FROM generate_series(0, 29) AS b
            ), counts AS (
                SELECT 29 - floor(extract(epoch FROM now() - created_at) / 10)::int AS b,
                       count(*) FILTER (WHERE status = 'sent') AS sent,
                       count(*) FILTER (WHERE status = 'failed') AS failed
                FROM delivery_log WHERE created_at > now() - interval '300 seconds' GROUP BY 1
            )
            SELECT json_build_object(
                'queued', (SELECT count(*) FROM delivery_outbox),
                'due', (SELECT count(*) FROM delivery_outbox WHERE next_attempt_at <= now()),
                'retrying', (SELECT count(*) FROM delivery_outbox WHERE attempts > 0),
                'oldest_seconds', coalesce((SELECT extract(epoch FROM now() - min(enqueued_at))::float8
                                            FROM delivery_outbox), 0),
                'sent_per_bucket', (SELECT json_agg(coalesce(c.sent, 0) ORDER BY buckets.b)
                                    FROM buckets LEFT JOIN counts c ON c.b = buckets.b),
                'failed_per_bucket', (SELECT json_agg(coalesce(c.failed, 0) ORDER BY buckets.b)
                                      FROM buckets LEFT JOIN counts c ON c.b = buckets.b),
                'bucket_seconds', 10)::text
            """, as: String.self).first else {
            throw StoreError.unavailable("the queue could not be read")
        }
        return try Self.decode(QueueSnapshot.self, from: text)
    }
}
