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
        try await connection.query("""
            SELECT liverelay_queue_push_to_start(\(secretHash), \(sessionID), \(state)::jsonb, \(payload)::jsonb,
                                                 \(attributesType), \(sessionAttributesType), \(requestID))
            """, logger: logger)
        try await connection.query("SELECT liverelay_wake()", logger: logger)
    }
}
