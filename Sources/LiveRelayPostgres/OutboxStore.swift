import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

/// The delivery workers' SQL: claim due rows, lock activities, read their state, record outcomes.
/// Every call runs inside the worker's batch transaction; row locks and activity locks end with it.
public struct OutboxStore: Sendable {
    public let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// Locks up to `limit` due rows that no other worker holds.
    public func claim(limit: Int, on connection: PostgresConnection) async throws -> (rows: [OutboxRow], now: Int64) {
        let stream = try await connection.query("""
            SELECT id, kind, activity_id, event_type, secret_hash, session_id, device_token, bundle_id, apns_env,
                   payload::text, priority::int4, apns_id, request_id, extract(epoch FROM enqueued_at)::float8, attempts,
                   floor(extract(epoch FROM clock_timestamp()))::int8
            FROM delivery_outbox
            WHERE next_attempt_at <= now()
            ORDER BY next_attempt_at, id
            LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
            """, logger: logger)
        var rows: [OutboxRow] = []
        var now = Int64(Date().timeIntervalSince1970)
        for try await (id, kind, activityID, eventType, secretHash, sessionID, deviceToken, bundleID, env, payload, priority,
                       apnsID, requestID, enqueuedAt, attempts, dbNow)
            in stream.decode((Int64, String, UUID?, String, String?, String?, String?, String?, String?, String?, Int32?,
                              UUID, UUID?, Double, Int32, Int64).self)
        {
            now = dbNow
            rows.append(OutboxRow(
                id: id, kind: OutboxRow.Kind(rawValue: kind) ?? .alert, activityID: activityID, eventType: eventType,
                secretHash: secretHash, sessionID: sessionID, deviceToken: deviceToken, bundleID: bundleID,
                environment: env.flatMap(APNsEnvironment.init(rawValue:)), payload: payload.flatMap { try? JSONValue(parsing: $0) },
                priority: priority.map(Int.init), apnsID: apnsID, requestID: requestID, enqueuedAt: enqueuedAt,
                attempts: Int(attempts)))
        }
        return (rows, now)
    }

    /// Takes the per-activity lock for each activity it can: one sender per activity, across all relays.
    public func lockActivities(_ ids: [UUID], on connection: PostgresConnection) async throws -> Set<UUID> {
        guard !ids.isEmpty else { return [] }
        var locked = Set<UUID>()
        for try await id in try await connection.query("""
            SELECT a FROM unnest(\(ids)::uuid[]) AS a WHERE pg_try_advisory_xact_lock(hashtextextended(a::text, 7031))
            """, logger: logger).decode(UUID.self) {
            locked.insert(id)
        }
        return locked
    }

    /// The current state of locked activities, merged with the device's message and what was last sent.
    public func snapshots(_ ids: Set<UUID>, on connection: PostgresConnection) async throws -> [UUID: ActivitySnapshot] {
        guard !ids.isEmpty else { return [:] }
        var result: [UUID: ActivitySnapshot] = [:]
        for try await (id, token, bundleID, env, status, contentState, stale, dismissal, relevance, priority, hasMessage, message,
                       lastTimestamp, lastPayload, platform)
            in try await connection.query("""
                SELECT a.id, a.activity_token, a.bundle_id, a.apns_env, a.status, a.content_state::text,
                       floor(extract(epoch FROM a.stale_date))::int8, floor(extract(epoch FROM a.dismissal_date))::int8,
                       a.relevance_score, a.priority::int4, m.device_uuid IS NOT NULL, m.message,
                       s.last_timestamp, encode(s.last_payload, 'hex'), a.platform
                FROM activity_registration a
                LEFT JOIN device_live_activity_message m ON m.device_uuid = a.device_uuid
                LEFT JOIN activity_delivery_state s ON s.activity_id = a.id
                WHERE a.id = ANY(\(Array(ids))::uuid[])
                """, logger: logger).decode(
                    (UUID, String, String, String, String, String?, Int64?, Int64?, Double?, Int32, Bool, String?, Int64?, String?, String).self)
        {
            result[id] = ActivitySnapshot(
                id: id, activityToken: token, bundleID: bundleID, environment: APNsEnvironment(rawValue: env) ?? .production,
                status: status, contentState: contentState.flatMap { try? JSONValue(parsing: $0) }, staleDate: stale,
                dismissalDate: dismissal, relevanceScore: relevance, priority: Int(priority),
                message: hasMessage ? (message ?? "") : nil, lastTimestamp: lastTimestamp, lastPayloadHash: lastPayload)
            result[id]?.platform = platform
        }
        return result
    }

    /// Writes a batch's outcomes: log rows, removed and rescheduled outbox rows, dead tokens, environment changes.
    public func record(_ outcome: BatchOutcome, on connection: PostgresConnection) async throws {
        if !outcome.logs.isEmpty { try await insertLogs(outcome.logs, on: connection) }
        if !outcome.finishedRowIDs.isEmpty {
            try await connection.query("DELETE FROM delivery_outbox WHERE id = ANY(\(outcome.finishedRowIDs)::int8[])", logger: logger)
        }
        if !outcome.retries.isEmpty {
            let ids = outcome.retries.map(\.rowID)
            let delays = outcome.retries.map { Int64($0.delaySeconds * 1000) }
            let errors = outcome.retries.map(\.error)
            try await connection.query("""
                UPDATE delivery_outbox o SET attempts = o.attempts + 1,
                       next_attempt_at = now() + r.delay_ms * interval '1 millisecond', last_error = r.error
                FROM unnest(\(ids)::int8[], \(delays)::int8[], \(errors)::text[]) AS r(id, delay_ms, error)
                WHERE o.id = r.id
                """, logger: logger)
        }
        if !outcome.sentStates.isEmpty {
            let ids = outcome.sentStates.map(\.activityID)
            let timestamps = outcome.sentStates.map(\.timestamp)
            let hashes = outcome.sentStates.map(\.stateHash)
            try await connection.query("""
                INSERT INTO activity_delivery_state (activity_id, last_timestamp, last_payload, last_sent_at)
                SELECT s.id, s.ts, decode(s.hash, 'hex'), now()
                FROM unnest(\(ids)::uuid[], \(timestamps)::int8[], \(hashes)::text[]) AS s(id, ts, hash)
                JOIN activity_registration a ON a.id = s.id
                ON CONFLICT (activity_id) DO UPDATE
                SET last_timestamp = excluded.last_timestamp, last_payload = excluded.last_payload, last_sent_at = excluded.last_sent_at
                """, logger: logger)
        }
        if !outcome.deadActivityTokens.isEmpty {
            let ids = outcome.deadActivityTokens.map(\.activityID)
            let tokens = outcome.deadActivityTokens.map(\.token)
            try await connection.query("""
                UPDATE activity_registration a SET status = 'invalidated'
                FROM unnest(\(ids)::uuid[], \(tokens)::text[]) AS d(id, token)
                WHERE a.id = d.id AND a.activity_token = d.token AND a.status <> 'invalidated'
                """, logger: logger)
        }
        if !outcome.deadDeviceTokens.isEmpty {
            try await connection.query(
                "DELETE FROM device_registration WHERE device_token = ANY(\(outcome.deadDeviceTokens)::text[])", logger: logger)
        }
        if !outcome.deadStartTokens.isEmpty {
            try await connection.query("""
                UPDATE device_registration SET push_to_start_token = NULL
                WHERE push_to_start_token = ANY(\(outcome.deadStartTokens)::text[])
                """, logger: logger)
        }
        for change in outcome.environmentChanges {
            let env = change.environment.rawValue
            try await connection.query("""
                UPDATE activity_registration SET apns_env = \(env) WHERE activity_token = \(change.token) AND apns_env <> \(env)
                """, logger: logger)
            try await connection.query("""
                UPDATE device_registration SET apns_env = \(env)
                WHERE (device_token = \(change.token) OR push_to_start_token = \(change.token)) AND apns_env <> \(env)
                """, logger: logger)
        }
    }

    private func insertLogs(_ logs: [DeliveryLogEntry], on connection: PostgresConnection) async throws {
        try await connection.query("""
            INSERT INTO delivery_log (secret_hash, event_type, session_id, status, error, outbox_id, activity_id, push_type,
                                      apns_env, token_suffix, apns_id, apns_status, apns_reason, attempt, latency_ms, request_id)
            SELECT nullif(l.secret_hash, ''), l.event_type, nullif(l.session_id, ''), l.status, nullif(l.error, ''), l.outbox_id,
                   nullif(l.activity_id, '')::uuid, l.push_type, nullif(l.apns_env, ''), nullif(l.token_suffix, ''),
                   l.apns_id, nullif(l.apns_status, 0), nullif(l.apns_reason, ''), l.attempt, nullif(l.latency_ms, -1),
                   nullif(l.request_id, '')::uuid
            FROM unnest(\(logs.map { $0.secretHash ?? "" })::text[], \(logs.map(\.eventType))::text[],
                        \(logs.map { $0.sessionID ?? "" })::text[], \(logs.map(\.status))::text[], \(logs.map { $0.error ?? "" })::text[],
                        \(logs.map(\.outboxID))::int8[], \(logs.map { $0.activityID?.uuidString ?? "" })::text[],
                        \(logs.map(\.pushType))::text[], \(logs.map { $0.environment ?? "" })::text[],
                        \(logs.map { $0.tokenSuffix ?? "" })::text[], \(logs.map(\.apnsID))::uuid[],
                        \(logs.map { Int32($0.apnsStatus ?? 0) })::int4[], \(logs.map { $0.apnsReason ?? "" })::text[],
                        \(logs.map { Int32($0.attempt) })::int4[], \(logs.map { $0.latencyMilliseconds ?? -1 })::float8[],
                        \(logs.map { $0.requestID?.uuidString ?? "" })::text[])
                 AS l(secret_hash, event_type, session_id, status, error, outbox_id, activity_id, push_type, apns_env,
                      token_suffix, apns_id, apns_status, apns_reason, attempt, latency_ms, request_id)
            """, logger: logger)
    }
}

/// Everything one batch decided, written in the batch's transaction.
public struct BatchOutcome: Sendable {
    public struct Retry: Sendable {
        public var rowID: Int64
        public var delaySeconds: Double
        public var error: String
        public init(rowID: Int64, delaySeconds: Double, error: String) {
            self.rowID = rowID
            self.delaySeconds = delaySeconds
            self.error = error
        }
    }
    public struct SentState: Sendable {
        public var activityID: UUID
        public var timestamp: Int64
        public var stateHash: String
        public init(activityID: UUID, timestamp: Int64, stateHash: String) {
            self.activityID = activityID
            self.timestamp = timestamp
            self.stateHash = stateHash
        }
    }
    public struct EnvironmentChange: Sendable {
        public var token: String
        public var environment: APNsEnvironment
        public init(token: String, environment: APNsEnvironment) {
            self.token = token
            self.environment = environment
        }
    }

    public var logs: [DeliveryLogEntry] = []
    public var finishedRowIDs: [Int64] = []
    public var retries: [Retry] = []
    public var sentStates: [SentState] = []
    public var deadActivityTokens: [(activityID: UUID, token: String)] = []
    public var deadDeviceTokens: [String] = []
    public var deadStartTokens: [String] = []
    public var environmentChanges: [EnvironmentChange] = []

    public init() {}
}

/// One `delivery_log` row.
public struct DeliveryLogEntry: Sendable {
    public var secretHash: String?
    public var eventType: String
    public var sessionID: String?
    public var status: String
    public var error: String?
    public var outboxID: Int64
    public var activityID: UUID?
    public var pushType: String
    public var environment: String?
    public var tokenSuffix: String?
    public var apnsID: UUID
    public var apnsStatus: Int?
    public var apnsReason: String?
    public var attempt: Int
    public var latencyMilliseconds: Double?
    public var requestID: UUID?

    public init(row: OutboxRow, status: String, error: String?, pushType: String, environment: String?, token: String?,
                apnsStatus: Int?, apnsReason: String?, latencyMilliseconds: Double?) {
        self.secretHash = row.secretHash
        self.eventType = row.eventType
        self.sessionID = row.sessionID
        self.status = status
        self.error = error
        self.outboxID = row.id
        self.activityID = row.activityID
        self.pushType = pushType
        self.environment = environment
        self.tokenSuffix = token.map { String($0.suffix(8)) }
        self.apnsID = row.apnsID
        self.apnsStatus = apnsStatus
        self.apnsReason = apnsReason
        self.attempt = row.attempts + 1
        self.latencyMilliseconds = latencyMilliseconds
        self.requestID = row.requestID
    }
}
