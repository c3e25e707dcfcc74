import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore
import Logging
import PostgresNIO

/// The OpenCode relay API, byte-compatible with the original relay: device and activity registration, and events.
/// Every route writes through the database; the triggers and workers deliver.
struct RelayRoutes: Sendable {
    let store: RelayStore
    let defaultBundleID: String?
    /// How long `/v1/event` waits for APNs outcomes before answering with what it has.
    var outcomeWait: Duration = .seconds(5)

    func register(on router: Router<BasicRequestContext>) {
        router.post("v1/device/register") { request, _ in try await registerDevice(request) }
        router.post("v1/device/unregister") { request, _ in try await unregisterDevice(request) }
        router.post("v1/activity/register") { request, _ in try await registerActivity(request) }
        router.post("v1/activity/unregister") { request, _ in try await unregisterActivity(request) }
        router.post("v1/event") { request, _ in try await event(request) }
    }

    private static let ok = jsonResponse(.ok, ["ok": .bool(true)])

    private func bundleID(_ given: String?) throws -> String {
        guard let bundle = given ?? defaultBundleID else {
            throw APIError.badRequest("bundleId is required (the relay has no APNS_DEFAULT_BUNDLE_ID)")
        }
        return bundle
    }

    func registerDevice(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: DeviceRegistrationBody.self)
        try await store.registerDevice(DeviceRegistration(
            secretHash: secretHash(body.secret), token: body.deviceToken, bundleID: try bundleID(body.bundleID),
            environment: body.environment, platform: body.platform, pushToStartToken: body.pushToStartToken,
            deviceName: body.deviceName, deviceUUID: body.deviceUUID))
        return Self.ok
    }

    func unregisterDevice(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: DeviceUnregistrationBody.self)
        let hash = secretHash(body.secret), token = body.deviceToken
        try await store.execute("DELETE FROM device_registration WHERE secret_hash = \(hash) AND device_token = \(token)")
        return Self.ok
    }

    func registerActivity(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: ActivityRegistrationBody.self)
        let hash = secretHash(body.secret), session = body.sessionID, token = body.activityToken
        let bundle = try bundleID(body.bundleID)
        let environment = body.environment.rawValue, platform = body.platform.rawValue
        try await store.execute("""
            INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env, status,
                                               platform)
            VALUES (\(hash), \(session), \(token), \(bundle), \(environment), 'active', \(platform))
            ON CONFLICT (secret_hash, session_id) DO UPDATE
            SET activity_token = excluded.activity_token, bundle_id = excluded.bundle_id, apns_env = excluded.apns_env,
                status = 'active', platform = excluded.platform
            """)
        return Self.ok
    }

    func unregisterActivity(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: ActivityUnregistrationBody.self)
        let hash = secretHash(body.secret), session = body.sessionID
        try await store.execute(
            "DELETE FROM activity_registration WHERE secret_hash = \(hash) AND session_id = \(session)")
        return Self.ok
    }

    /// `complete`/`permission`/`error`: alert pushes to the secret's devices (`complete`/`error` also end the session's
    /// activity). `progress`/`start`: update the session's activity, or push-to-start when none is registered.
    func event(_ request: Request) async throws -> Response {
        let event = try await request.decode(as: EventBody.self)
        let hash = secretHash(event.secret), eventType = event.kind.rawValue, session = event.sessionID
        let title = event.title, text = event.body, serverID = event.serverID, contentState = event.contentState
        let requestID = UUID()
        let queued: Int64
        switch event.kind {
        case .complete, .permission, .error:
            let defaults = Self.alertDefaults[eventType]!
            var data: [String: JSONValue] = ["eventType": .string(eventType), "sessionID": .string(session)]
            if let serverID { data["serverID"] = .string(serverID) }
            let payload = APNsPayload.alert(title: title ?? defaults.title, body: text ?? defaults.body, data: data)
            let payloadText = String(decoding: payload.compactBytes, as: UTF8.self)
            var androidData = ["eventType": eventType, "sessionID": session]
            if let serverID { androidData["serverID"] = serverID }
            let androidPayload = FCMPayload.alert(
                title: title ?? defaults.title, body: text ?? defaults.body, data: androidData)
            let androidText = String(decoding: androidPayload.compactBytes, as: UTF8.self)
            let contentText = contentState.map { String(decoding: $0.compactBytes, as: UTF8.self) }
            queued = try await store.withTransaction { connection in
                try await connection.query("SELECT set_config('liverelay.request_id', \(requestID.uuidString), true)", logger: store.logger)
                try await connection.query("""
                    INSERT INTO delivery_outbox (kind, event_type, secret_hash, session_id, device_token, bundle_id, apns_env,
                                                 payload, priority, request_id, platform)
                    SELECT 'alert', \(eventType), secret_hash, \(session), device_token, bundle_id, apns_env,
                           CASE WHEN platform = 'android' THEN \(androidText)::jsonb ELSE \(payloadText)::jsonb END, 10,
                           \(requestID), platform
                    FROM device_registration WHERE secret_hash = \(hash)
                    """, logger: store.logger)
                if eventType != "permission" {
                    try await connection.query("""
                        UPDATE activity_registration
                        SET status = 'ended', content_state = coalesce(\(contentText)::jsonb, content_state)
                        WHERE secret_hash = \(hash) AND session_id = \(session) AND status = 'active'
                        """, logger: store.logger)
                }
                try await connection.query("SELECT liverelay_wake()", logger: store.logger)
                return try await Self.count(requestID, on: connection, logger: store.logger)
            }
        case .progress, .start:
            let contentText = contentState.map { String(decoding: $0.compactBytes, as: UTF8.self) }
            let startState = contentState ?? .object([
                "status": .string("working"), "sessionTitle": .string(title ?? "OpenCode session"),
                "lastMessage": .string(text ?? "Starting..."), "retryInfo": .null,
            ])
            let start = APNsPayload.pushToStart(
                timestamp: 1_000_000_000, attributesType: "SessionActivityAttributes",
                attributes: .object(["sessionId": .string(session)]), contentState: startState,
                alert: .object(["title": .string(title ?? "Session Started"),
                                "body": .string(text ?? "OpenCode is working on: \(title ?? session)")]))
            let startBytes = start.compactBytes
            guard startBytes.count <= APNsPayload.maximumSize else {
                throw APIError.badRequest("contentState makes the push \(startBytes.count) bytes; APNs accepts at most 4096")
            }
            let startText = String(decoding: startBytes, as: UTF8.self)
            queued = try await store.withTransaction { connection in
                try await connection.query("SELECT set_config('liverelay.request_id', \(requestID.uuidString), true)", logger: store.logger)
                var updated = 0
                for try await _ in try await connection.query("""
                    UPDATE activity_registration SET content_state = coalesce(\(contentText)::jsonb, content_state)
                    WHERE secret_hash = \(hash) AND session_id = \(session) AND status = 'active' RETURNING id
                    """, logger: store.logger) { updated += 1 }
                if updated == 0 {
                    try await connection.query("""
                        INSERT INTO delivery_outbox (kind, event_type, secret_hash, session_id, device_token, bundle_id, apns_env,
                                                     payload, priority, request_id)
                        SELECT 'start', 'start', secret_hash, \(session), push_to_start_token, bundle_id, apns_env, \(startText)::jsonb,
                               10, \(requestID)
                        FROM device_registration
                        WHERE secret_hash = \(hash) AND push_to_start_token IS NOT NULL AND platform = 'ios'
                        """, logger: store.logger)
                    try await connection.query("SELECT liverelay_wake()", logger: store.logger)
                }
                return try await Self.count(requestID, on: connection, logger: store.logger)
            }
        }
        let (sent, failed) = try await waitForOutcomes(requestID, expected: queued)
        return jsonResponse(.ok, [
            "ok": .bool(true), "sent": .integer(sent), "failed": .integer(failed),
            "pending": .integer(max(0, queued - sent - failed)),
        ])
    }

    private static let alertDefaults: [String: (title: String, body: String)] = [
        "complete": ("Session complete", "OpenCode finished working."),
        "permission": ("Permission needed", "OpenCode needs your decision."),
        "error": ("Session error", "OpenCode hit an error."),
    ]

    private static func count(_ requestID: UUID, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        var total: Int64 = 0
        for try await value in try await connection.query(
            "SELECT count(*)::int8 FROM delivery_outbox WHERE request_id = \(requestID)", logger: logger).decode(Int64.self) {
            total = value
        }
        return total
    }

    /// Waits (up to `outcomeWait`) until every delivery of the request has a final outcome; a state already sent counts as sent.
    private func waitForOutcomes(_ requestID: UUID, expected: Int64) async throws -> (sent: Int64, failed: Int64) {
        guard expected > 0 else { return (0, 0) }
        let deadline = ContinuousClock.now + outcomeWait
        var outcome: (sent: Int64, failed: Int64) = (0, 0)
        while true {
            outcome = try await store.withConnection { connection in
                var counts: (Int64, Int64) = (0, 0)
                for try await row in try await connection.query("""
                    SELECT count(*) FILTER (WHERE status IN ('sent', 'coalesced'))::int8, count(*) FILTER (WHERE status = 'failed')::int8
                    FROM delivery_log WHERE request_id = \(requestID)
                    """, logger: store.logger).decode((Int64, Int64).self) {
                    counts = row
                }
                return counts
            }
            if outcome.sent + outcome.failed >= expected || ContinuousClock.now >= deadline { return outcome }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
