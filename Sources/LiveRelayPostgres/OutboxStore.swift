import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

/// The delivery workers' SQL: claim due rows, lock activities, read their state, record outcomes.
/// Every call runs inside the worker's batch transaction; row locks and activity locks end with it.
public struct OutboxStore: Sendable {
    public let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// What one claim returns.
    public struct Claim: Sendable {
        public var rows: [OutboxRow] = []
        /// Epoch seconds from the database clock.
        public var now: Int64 = 0
        /// Activities this worker holds the per-activity lock of (others are being sent by another worker).
        public var lockedActivities: Set<UUID> = []
        /// The current state of each locked activity (absent when the activity was deleted).
        public var snapshots: [UUID: ActivitySnapshot] = [:]
    }

    /// In one statement (one round trip): locks up to `limit` due rows no other worker holds, takes the per-activity
    /// advisory lock of each of their activities it can (one sender per activity across all relays), and reads those
    /// activities' state with the device's message and what was last sent (in a snapshot taken after the locks).
    ///
    /// The worker session plans it afresh on every call (`plan_cache_mode = force_custom_plan`, see DeliveryWorker):
    /// a cached generic plan made while the outbox was empty scanned and sorted the whole backlog and joined the
    /// batch with itself row by row, 100 ms per batch of 500 once 100,000 rows were queued.
    public func claim(limit: Int, on connection: PostgresConnection) async throws -> Claim {
        // A prepared statement: planned once per connection, not once per batch.
        let stream = try await connection.execute(ClaimStatement(limit: Int64(limit)), logger: logger)
        var claim = Claim(now: Int64(Date().timeIntervalSince1970))
        for try await (id, kind, rowPlatform, activityID, eventType, secretHash, sessionID, deviceToken, bundleID, env, payload, priority,
                       apnsID, requestID, enqueuedAt, attempts, dbNow, locked,
                       snapshotID, token, snapshotBundle, snapshotEnv, status, contentState, stale, dismissal, relevance, snapshotPriority,
                       hasMessage, message, lastTimestamp, lastPayload, platform) in stream
        {
            claim.now = dbNow
            claim.rows.append(OutboxRow(
                id: id, kind: OutboxRow.Kind(rawValue: kind) ?? .alert, platform: Platform(rawValue: rowPlatform) ?? .ios,
                activityID: activityID, eventType: eventType,
                secretHash: secretHash, sessionID: sessionID, deviceToken: deviceToken, bundleID: bundleID,
                environment: env.flatMap(APNsEnvironment.init(rawValue:)), payload: payload.flatMap { try? JSONValue(parsing: $0) },
                priority: priority.map(Int.init), apnsID: apnsID, requestID: requestID, enqueuedAt: enqueuedAt,
                attempts: Int(attempts)))
            guard locked, let activityID else { continue }
            claim.lockedActivities.insert(activityID)
            guard claim.snapshots[activityID] == nil, snapshotID != nil, let token, let snapshotBundle,
                  let status = status.flatMap(ActivityStatus.init(rawValue:)) else { continue }
            claim.snapshots[activityID] = ActivitySnapshot(
                id: activityID, activityToken: token, bundleID: snapshotBundle,
                environment: snapshotEnv.flatMap(APNsEnvironment.init(rawValue:)) ?? .production, status: status,
                platform: platform.flatMap(Platform.init(rawValue:)) ?? .ios,
                contentState: contentState.flatMap { try? JSONValue(parsing: $0) }, staleDate: stale, dismissalDate: dismissal,
                relevanceScore: relevance, priority: Int(snapshotPriority ?? 10), message: hasMessage ? (message ?? "") : nil,
                lastTimestamp: lastTimestamp, lastPayloadHash: lastPayload)
        }
        return claim
    }

    /// Writes a batch's outcomes: log rows, removed and rescheduled outbox rows, dead tokens, environment changes.
    public func record(_ outcome: BatchOutcome, on connection: PostgresConnection) async throws {
        // The common outcomes in one statement (one round trip): log rows, finished rows removed, retries rescheduled,
        // what was sent remembered per activity.
        let logs = outcome.logs
        let retryIDs = outcome.retries.map(\.rowID)
        let retryDelays = outcome.retries.map { Int64($0.delaySeconds * 1000) }
        let retryErrors = outcome.retries.map(\.error)
        let stateIDs = outcome.sentStates.map(\.activityID)
        let stateTimestamps = outcome.sentStates.map(\.timestamp)
        let stateHashes = outcome.sentStates.map(\.stateHash)
        try await connection.query("""
            WITH logged AS (
                INSERT INTO delivery_log (secret_hash, event_type, session_id, status, error, outbox_id, activity_id, push_type,
                                          apns_env, token_suffix, apns_id, apns_status, apns_reason, attempt, latency_ms, request_id,
                                          transport, provider_status, provider_reason)
                SELECT nullif(l.secret_hash, ''), l.event_type, nullif(l.session_id, ''), l.status, nullif(l.error, ''), l.outbox_id,
                       nullif(l.activity_id, '')::uuid, nullif(l.push_type, ''), nullif(l.apns_env, ''), nullif(l.token_suffix, ''),
                       l.apns_id, CASE WHEN l.transport = 'apns' THEN nullif(l.status_code, 0) END,
                       CASE WHEN l.transport = 'apns' THEN nullif(l.reason, '') END, l.attempt, nullif(l.latency_ms, -1),
                       nullif(l.request_id, '')::uuid, nullif(l.transport, ''), nullif(l.status_code, 0), nullif(l.reason, '')
                FROM unnest(\(logs.map { $0.secretHash ?? "" })::text[], \(logs.map(\.eventType))::text[],
                            \(logs.map { $0.sessionID ?? "" })::text[], \(logs.map(\.status.rawValue))::text[], \(logs.map { $0.error ?? "" })::text[],
                            \(logs.map(\.outboxID))::int8[], \(logs.map { $0.activityID?.uuidString ?? "" })::text[],
                            \(logs.map { $0.pushType ?? "" })::text[], \(logs.map { $0.environment ?? "" })::text[],
                            \(logs.map { $0.tokenSuffix ?? "" })::text[], \(logs.map(\.apnsID))::uuid[],
                            \(logs.map { Int32($0.providerStatus ?? 0) })::int4[], \(logs.map { $0.providerReason ?? "" })::text[],
                            \(logs.map { Int32($0.attempt) })::int4[], \(logs.map { $0.latencyMilliseconds ?? -1 })::float8[],
                            \(logs.map { $0.requestID?.uuidString ?? "" })::text[],
                            \(logs.map { $0.transport?.rawValue ?? "" })::text[])
                     AS l(secret_hash, event_type, session_id, status, error, outbox_id, activity_id, push_type, apns_env,
                          token_suffix, apns_id, status_code, reason, attempt, latency_ms, request_id, transport)
            ), removed AS (
                DELETE FROM delivery_outbox WHERE id = ANY(\(outcome.finishedRowIDs)::int8[])
            ), rescheduled AS (
                UPDATE delivery_outbox o SET attempts = o.attempts + 1,
                       next_attempt_at = now() + r.delay_ms * interval '1 millisecond', last_error = r.error
                FROM unnest(\(retryIDs)::int8[], \(retryDelays)::int8[], \(retryErrors)::text[]) AS r(id, delay_ms, error)
                WHERE o.id = r.id
            ), remembered AS (
                INSERT INTO activity_delivery_state (activity_id, last_timestamp, last_payload, last_sent_at)
                SELECT s.id, s.ts, decode(s.hash, 'hex'), now()
                FROM unnest(\(stateIDs)::uuid[], \(stateTimestamps)::int8[], \(stateHashes)::text[]) AS s(id, ts, hash)
                JOIN activity_registration a ON a.id = s.id
                ON CONFLICT (activity_id) DO UPDATE
                SET last_timestamp = excluded.last_timestamp, last_payload = excluded.last_payload, last_sent_at = excluded.last_sent_at
            )
            SELECT 1
            """, logger: logger)
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
}

/// The claim query (see `OutboxStore.claim`).
struct ClaimStatement: PostgresPreparedStatement {
    typealias Row = (Int64, String, String, UUID?, String, String?, String?, String?, String?, String?, String?, Int32?, UUID, UUID?,
                     Double, Int32, Int64, Bool,
                     UUID?, String?, String?, String?, String?, String?, Int64?, Int64?, Double?, Int32?, Bool, String?, Int64?,
                     String?, String?)
    static let name = "liverelay_claim_v3"
    static let sql = """
            WITH claimed AS MATERIALIZED (
                SELECT id, kind, platform, activity_id, event_type, secret_hash, session_id, device_token, bundle_id, apns_env, payload,
                       priority, apns_id, request_id, enqueued_at, attempts, next_attempt_at
                FROM delivery_outbox
                WHERE next_attempt_at <= now()
                ORDER BY next_attempt_at, id
                LIMIT $1
                FOR UPDATE SKIP LOCKED
            ), locked AS MATERIALIZED (
                SELECT d.activity_id FROM (SELECT DISTINCT activity_id FROM claimed WHERE activity_id IS NOT NULL) d
                WHERE pg_try_advisory_xact_lock(hashtextextended(d.activity_id::text, 7031))
            ), states AS MATERIALIZED (
                -- Read after the locks are held, with a fresh snapshot (see sql/040_delivery.sql).
                SELECT * FROM liverelay_locked_activity_states(ARRAY(SELECT activity_id FROM locked))
            )
            SELECT c.id, c.kind, c.platform, c.activity_id, c.event_type, c.secret_hash, c.session_id, c.device_token, c.bundle_id, c.apns_env,
                   c.payload::text, c.priority::int4, c.apns_id, c.request_id, extract(epoch FROM c.enqueued_at)::float8, c.attempts,
                   floor(extract(epoch FROM clock_timestamp()))::int8, l.activity_id IS NOT NULL,
                   a.id, a.activity_token, a.bundle_id, a.apns_env, a.status, a.content_state,
                   a.stale_date, a.dismissal_date, a.relevance_score, a.priority, coalesce(a.has_message, false), a.message,
                   a.last_timestamp, a.last_payload, a.platform
            FROM claimed c
            LEFT JOIN locked l ON l.activity_id = c.activity_id
            LEFT JOIN states a ON a.id = l.activity_id
            ORDER BY c.next_attempt_at, c.id
        """
    var limit: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(limit)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row {
        try row.decode(Row.self)
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
    public var status: DeliveryStatus
    public var error: String?
    public var outboxID: Int64
    public var activityID: UUID?
    /// The push service that answered (nil for rows settled without a request).
    public var transport: TransportKind?
    public var pushType: String?
    public var environment: String?
    public var tokenSuffix: String?
    public var apnsID: UUID
    public var providerStatus: Int?
    public var providerReason: String?
    public var attempt: Int
    public var latencyMilliseconds: Double?
    public var requestID: UUID?

    public init(row: OutboxRow, status: DeliveryStatus, error: String?, transport: TransportKind?, pushType: String?,
                environment: APNsEnvironment?, token: String?, providerStatus: Int?, providerReason: String?,
                latencyMilliseconds: Double?) {
        self.secretHash = row.secretHash
        self.eventType = row.eventType
        self.sessionID = row.sessionID
        self.status = status
        self.error = error
        self.outboxID = row.id
        self.activityID = row.activityID
        self.transport = transport
        self.pushType = pushType
        self.environment = transport == .apns ? environment?.rawValue : nil
        self.tokenSuffix = token.map { String($0.suffix(8)) }
        self.apnsID = row.apnsID
        self.providerStatus = providerStatus
        self.providerReason = providerReason
        self.attempt = row.attempts + 1
        self.latencyMilliseconds = latencyMilliseconds
        self.requestID = row.requestID
    }
}
