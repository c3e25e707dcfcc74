import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore

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
        var device = DeviceRegistration(
            secretHash: secretHash(body.secret), token: body.deviceToken, bundleID: try bundleID(body.bundleID),
            environment: body.environment, platform: body.platform, pushToStartToken: body.pushToStartToken,
            deviceName: body.deviceName, deviceUUID: body.deviceUUID)
        device.pushToStartTokens = body.pushToStartTokens
        device.widgetPushToken = body.widgetPushToken
        try await store.registerDevice(device)
        return Self.ok
    }

    func unregisterDevice(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: DeviceUnregistrationBody.self)
        try await store.unregisterDevice(secretHash: secretHash(body.secret), token: body.deviceToken)
        return Self.ok
    }

    func registerActivity(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: ActivityRegistrationBody.self)
        try await store.registerActivity(
            secretHash: secretHash(body.secret), sessionID: body.sessionID, token: body.activityToken,
            bundleID: try bundleID(body.bundleID), environment: body.environment, platform: body.platform)
        return Self.ok
    }

    func unregisterActivity(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: ActivityUnregistrationBody.self)
        try await store.unregisterActivity(secretHash: secretHash(body.secret), sessionID: body.sessionID)
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
            var androidData = ["eventType": eventType, "sessionID": session]
            if let serverID { androidData["serverID"] = serverID }
            queued = try await store.queueAlert(SessionAlert(
                secretHash: hash, eventType: eventType, sessionID: session,
                apnsPayload: APNsPayload.alert(title: title ?? defaults.title, body: text ?? defaults.body, data: data),
                fcmPayload: FCMPayload.alert(title: title ?? defaults.title, body: text ?? defaults.body,
                                             data: androidData),
                endsActivity: event.kind != .permission, finalState: contentState), requestID: requestID)
        case .progress, .start:
            let startState = contentState ?? .object([
                "status": .string("working"), "sessionTitle": .string(title ?? "OpenCode session"),
                "lastMessage": .string(text ?? "Starting..."), "retryInfo": .null,
            ])
            let start = APNsPayload.pushToStart(
                timestamp: 1_000_000_000, attributesType: RelayStore.sessionAttributesType,
                attributes: .object(["sessionId": .string(session)]), contentState: startState,
                alert: .object(["title": .string(title ?? "Session Started"),
                                "body": .string(text ?? "OpenCode is working on: \(title ?? session)")]))
            let size = start.compactBytes.count
            guard size <= APNsPayload.maximumSize else {
                throw APIError.badRequest("contentState makes the push \(size) bytes; APNs accepts at most 4096")
            }
            queued = try await store.progress(secretHash: hash, sessionID: session, contentState: contentState,
                                              pushToStart: start, attributesType: RelayStore.sessionAttributesType,
                                              requestID: requestID)
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

    /// Waits (up to `outcomeWait`) until every delivery of the request has a final outcome.
    private func waitForOutcomes(_ requestID: UUID, expected: Int64) async throws -> (sent: Int64, failed: Int64) {
        guard expected > 0 else { return (0, 0) }
        let deadline = ContinuousClock.now + outcomeWait
        while true {
            let outcome = try await store.outcomes(of: requestID)
            if outcome.sent + outcome.failed >= expected || ContinuousClock.now >= deadline { return outcome }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
