import Foundation
import LiveRelayCore
import PostgresNIO

/// An alert for every device of a pairing secret (`POST /v1/event` with `complete`, `permission` or `error`): the
/// prepared APNs and FCM payloads, and whether the session's activity ends with it.
public struct SessionAlert: Sendable {
    public var secretHash: String
    public var eventType: String
    public var sessionID: String
    public var apnsPayload: JSONValue
    public var fcmPayload: JSONValue
    public var endsActivity: Bool
    /// The activity's last content-state, when the event gives one.
    public var finalState: JSONValue?

    public init(secretHash: String, eventType: String, sessionID: String, apnsPayload: JSONValue,
                fcmPayload: JSONValue, endsActivity: Bool, finalState: JSONValue?) {
        self.secretHash = secretHash
        self.eventType = eventType
        self.sessionID = sessionID
        self.apnsPayload = apnsPayload
        self.fcmPayload = fcmPayload
        self.endsActivity = endsActivity
        self.finalState = finalState
    }
}

/// The OpenCode relay's writes: registrations under a pairing secret, and the events of `POST /v1/event`, whose
/// deliveries carry a request id so the route can report their outcomes.
extension RelayStore {
    public func unregisterDevice(secretHash: String, token: String) async throws {
        try await execute(
            "DELETE FROM device_registration WHERE secret_hash = \(secretHash) AND device_token = \(token)")
    }

    /// Registers (or re-registers, replacing the token and reactivating) the session's activity.
    public func registerActivity(secretHash: String, sessionID: String, token: String, bundleID: String,
                                 environment: APNsEnvironment, platform: Platform) async throws {
        let environment = environment.rawValue, platform = platform.rawValue
        try await execute("""
            INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env, status,
                                               platform)
            VALUES (\(secretHash), \(sessionID), \(token), \(bundleID), \(environment), 'active', \(platform))
            ON CONFLICT (secret_hash, session_id) DO UPDATE
            SET activity_token = excluded.activity_token, bundle_id = excluded.bundle_id, apns_env = excluded.apns_env,
                status = 'active', platform = excluded.platform
            """)
    }

    public func unregisterActivity(secretHash: String, sessionID: String) async throws {
        try await execute(
            "DELETE FROM activity_registration WHERE secret_hash = \(secretHash) AND session_id = \(sessionID)")
    }

    /// Queues the alert to each of the secret's devices (and ends the activity when asked); returns how many
    /// deliveries were queued under `requestID`.
    public func queueAlert(_ alert: SessionAlert, requestID: UUID) async throws -> Int64 {
        let apns = alert.apnsPayload.compactText, fcm = alert.fcmPayload.compactText
        let finalState = alert.finalState?.compactText
        return try await withTransaction { [logger] connection in
            try await Self.tag(connection, requestID, logger: logger)
            try await connection.query("""
                SELECT liverelay_queue_alert(\(alert.secretHash), \(alert.sessionID), \(alert.eventType),
                                             \(apns)::jsonb, \(fcm)::jsonb, \(requestID))
                """, logger: logger)
            if alert.endsActivity {
                try await connection.query("""
                    UPDATE activity_registration
                    SET status = 'ended', content_state = coalesce(\(finalState)::jsonb, content_state)
                    WHERE secret_hash = \(alert.secretHash) AND session_id = \(alert.sessionID) AND status = 'active'
                    """, logger: logger)
            }
            try await connection.query("SELECT liverelay_wake()", logger: logger)
            return try await Self.queued(requestID, on: connection, logger: logger)
        }
    }

    /// Updates the session's active activity (with `contentState` when given); with none, push-to-starts it: the
    /// activity is registered without an update token (its state waits for the token the app registers once iOS
    /// has started it) and the push-to-start payload goes to each of the secret's iOS devices' token for
    /// `attributesType`. Returns how many deliveries were queued.
    public func progress(secretHash: String, sessionID: String, contentState: JSONValue?, pushToStart: JSONValue,
                         attributesType: String, requestID: UUID) async throws -> Int64 {
        let state = contentState?.compactText, start = pushToStart.compactText
        return try await withTransaction { [logger] connection in
            try await Self.tag(connection, requestID, logger: logger)
            let updated = try await Self.values("""
                UPDATE activity_registration SET content_state = coalesce(\(state)::jsonb, content_state)
                WHERE secret_hash = \(secretHash) AND session_id = \(sessionID) AND status = 'active' RETURNING id
                """, as: UUID.self, on: connection, logger: logger)
            if updated.isEmpty {
                let startState = pushToStart.objectValue?["aps"]?.objectValue?["content-state"]?.compactText
                try await Self.queuePushToStart(secretHash: secretHash, sessionID: sessionID, state: startState,
                                                payload: start, attributesType: attributesType, requestID: requestID,
                                                on: connection, logger: logger)
            }
            return try await Self.queued(requestID, on: connection, logger: logger)
        }
    }

    /// How many of a request's deliveries have a final outcome: sent (a state already sent counts) and failed.
    public func outcomes(of requestID: UUID) async throws -> (sent: Int64, failed: Int64) {
        try await withConnection { [logger] connection in
            var counts: (Int64, Int64) = (0, 0)
            for try await row in try await connection.query("""
                SELECT count(*) FILTER (WHERE status IN ('sent', 'coalesced'))::int8,
                       count(*) FILTER (WHERE status = 'failed')::int8
                FROM delivery_log WHERE request_id = \(requestID)
                """, logger: logger).decode((Int64, Int64).self) { counts = row }
            return counts
        }
    }

    /// Which of `sessions` are registered under the pairing secret (who may read their `session:` channels).
    public func sessions(of secretHash: String, among sessions: [String]) async throws -> [String] {
        try await values("""
            SELECT session_id FROM activity_registration
            WHERE secret_hash = \(secretHash) AND session_id = ANY(\(sessions)::text[])
            """, as: String.self)
    }

    /// Marks the transaction's writes as the request's, for the triggers.
    static func tag(_ connection: PostgresConnection, _ requestID: UUID, logger: Logger) async throws {
        try await connection.query(
            "SELECT set_config('liverelay.request_id', \(requestID.uuidString), true)", logger: logger)
    }

    static func queued(_ requestID: UUID, on connection: PostgresConnection, logger: Logger) async throws
        -> Int64 {
        try await values("SELECT count(*)::int8 FROM delivery_outbox WHERE request_id = \(requestID)",
                         as: Int64.self, on: connection, logger: logger).first ?? 0
    }
}
