import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

/// The webhook worker's SQL (sql/037_webhook_queue.sql): claim due events chain by chain, record outcomes, end a
/// chain's lease. Each call is one statement in a transaction of its own; a claimed chain stays locked by the worker's
/// session until `unlock` (or until the connection ends).
public struct WebhookOutboxStore: Sendable {
    public let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// One claimed `webhook_outbox` row with its endpoint's URL and secret.
    public struct Row: Sendable {
        public var id: Int64
        public var endpointID: UUID
        public var activityID: UUID
        public var eventType: String
        public var attempts: Int
        /// When the event was written, epoch seconds.
        public var enqueuedAt: Double
        public var request: WebhookRequest
    }

    /// One outcome: delivered (finished), retried after a delay, or given up (finished, `failed`).
    public struct Outcome: Sendable {
        public var rowID: Int64
        public var status: DeliveryStatus
        public var error: String?
        public var httpStatus: Int?
        public var latencyMilliseconds: Double?
        /// For `retrying`: when to try again.
        public var retryDelaySeconds: Double?
        /// For `retrying`: why, as the endpoint's listing shows it (`webhook_outbox.last_error`); `error`, the log's,
        /// adds when the next attempt is, which is stale by the time anyone reads the listing.
        public var retryCause: String?

        public init(rowID: Int64, status: DeliveryStatus, error: String?, httpStatus: Int?,
                    latencyMilliseconds: Double?, retryDelaySeconds: Double? = nil, retryCause: String? = nil) {
            self.rowID = rowID
            self.status = status
            self.error = error
            self.httpStatus = httpStatus
            self.latencyMilliseconds = latencyMilliseconds
            self.retryDelaySeconds = retryDelaySeconds
            self.retryCause = retryCause
        }
    }

    /// One endpoint's events for one activity: delivered in order, one sender at a time across relays.
    public struct Chain: Hashable, Sendable {
        public var endpoint: UUID
        public var activity: UUID
        public init(endpoint: UUID, activity: UUID) {
            self.endpoint = endpoint
            self.activity = activity
        }
    }

    /// Up to `limit` due rows, oldest first, of the chains (endpoint, activity) this worker could lock and that no
    /// earlier row holds back, leaving out the chains it is still sending (`busy`).
    public func claim(limit: Int, excluding busy: [Chain], on connection: PostgresConnection) async throws -> [Row] {
        var rows: [Row] = []
        let stream = try await connection.query("""
            SELECT * FROM liverelay_claim_webhooks(\(Int32(limit)), \(busy.map(\.endpoint))::uuid[],
                                                   \(busy.map(\.activity))::uuid[])
            """, logger: logger)
        for try await (id, endpointID, url, secret, eventID, eventType, activityID, body, enqueuedAt, attempts)
            in stream.decode((Int64, UUID, String, String, UUID, String, UUID, String, Double, Int32).self) {
            rows.append(Row(
                id: id, endpointID: endpointID, activityID: activityID, eventType: eventType, attempts: Int(attempts),
                enqueuedAt: enqueuedAt,
                request: WebhookRequest(url: url, secret: secret, eventID: eventID, body: body)))
        }
        return rows
    }

    /// Seconds until the earliest row of an enabled endpoint is due; nil when there is none.
    public func secondsUntilDue(on connection: PostgresConnection) async throws -> Double? {
        var due: Double?
        for try await value in try await connection.query(
            "SELECT liverelay_next_webhook_due()", logger: logger).decode(Double?.self) { due = value }
        return due
    }

    /// Ends the lease of chains whose outcomes are recorded.
    public func unlock(_ chains: [Chain], on connection: PostgresConnection) async throws {
        guard !chains.isEmpty else { return }
        try await connection.query("""
            SELECT liverelay_unlock_webhook_chains(\(chains.map(\.endpoint))::uuid[], \(chains.map(\.activity))::uuid[])
            """, logger: logger)
    }

    /// Writes the outcomes in one statement (`liverelay_record_webhooks`).
    public func record(_ outcomes: [Outcome], on connection: PostgresConnection) async throws {
        guard !outcomes.isEmpty else { return }
        let finished = outcomes.filter { $0.status != .retrying }.map(\.rowID)
        let retries = outcomes.filter { $0.status == .retrying }
        try await connection.query("""
            SELECT liverelay_record_webhooks(
                \(outcomes.map(\.rowID))::int8[], \(outcomes.map(\.status.rawValue))::text[],
                \(NullableArray(outcomes.map(\.error)))::text[],
                \(NullableArray(outcomes.map { $0.httpStatus.map(Int32.init) }))::int4[],
                \(NullableArray(outcomes.map(\.latencyMilliseconds)))::float8[], \(finished)::int8[],
                \(retries.map(\.rowID))::int8[], \(retries.map { Int64(($0.retryDelaySeconds ?? 1) * 1000) })::int8[],
                \(NullableArray(retries.map { $0.retryCause ?? $0.error }))::text[])
            """, logger: logger)
    }
}
