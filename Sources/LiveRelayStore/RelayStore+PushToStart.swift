import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

extension RelayStore {
    /// The attributes type of the OpenCode app's activity, whose push-to-start token is `pushToStartToken`.
    public static let sessionAttributesType = "SessionActivityAttributes"

    /// Push-to-starts the session's activity on every iOS device of the secret that has a push-to-start token for
    /// `attributesType`: the activity is (re)registered active without an update token, holding `state`, and one
    /// `start` per device is queued. Nothing happens when no device can be started.
    static func queuePushToStart(secretHash: String, sessionID: String, state: String?, payload: String,
                                 attributesType: String, requestID: UUID, on connection: PostgresConnection,
                                 logger: Logger) async throws {
        // The activity starts when APNs accepts the push-to-start: its `started` event comes from the outcome.
        try await connection.query("SELECT set_config('liverelay.push_to_start', 'on', true)", logger: logger)
        try await connection.query("""
            WITH starters AS MATERIALIZED (
                SELECT d.bundle_id, d.apns_env,
                       coalesce(p.token, CASE WHEN \(attributesType) = \(sessionAttributesType)
                                              THEN d.push_to_start_token END) AS token
                FROM device_registration d
                LEFT JOIN device_push_to_start p ON p.device_id = d.id AND p.attributes_type = \(attributesType)
                WHERE d.secret_hash = \(secretHash) AND d.platform = 'ios'
            ), started AS (
                INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env,
                                                   platform, attributes_type, content_state, status)
                SELECT \(secretHash), \(sessionID), NULL, bundle_id, apns_env, 'ios', \(attributesType),
                       \(state)::jsonb, 'active'
                FROM starters WHERE token IS NOT NULL LIMIT 1
                ON CONFLICT (secret_hash, session_id) DO UPDATE
                SET activity_token = NULL, status = 'active', attributes_type = excluded.attributes_type,
                    content_state = coalesce(excluded.content_state, activity_registration.content_state)
                RETURNING id
            )
            INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id, device_token,
                                         bundle_id, apns_env, payload, priority, request_id)
            SELECT 'start', a.id, 'start', \(secretHash), \(sessionID), s.token, s.bundle_id, s.apns_env,
                   \(payload)::jsonb, 10, \(requestID)
            FROM starters s CROSS JOIN started a
            WHERE s.token IS NOT NULL
            """, logger: logger)
        try await connection.query("SELECT set_config('liverelay.push_to_start', '', true)", logger: logger)
        try await connection.query("SELECT liverelay_wake()", logger: logger)
    }
}
