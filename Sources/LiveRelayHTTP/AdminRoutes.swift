import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore
import LiveRelayStore

/// Device tokens and the device message REST endpoint (PostgREST-style, as the seed's raw REST).
struct AdminRoutes: Sendable {
    let auth: Authenticator
    let store: RelayStore
    /// Lifetime of a minted device token.
    var deviceTokenLifetimeSeconds: Int64 = 30 * 86_400

    /// `GET` is open to the admin and to a device token (its own row), so it is registered on the router itself.
    func register(on router: Router<BasicRequestContext>) {
        router.get("rest/v1/device_live_activity_message") { request, _ in try await readMessage(request) }
    }

    /// The admin-only routes, on the admin group.
    func register(admin: RouterGroup<BasicRequestContext>) {
        admin.post("v1/devices/:uuid/token") { _, context in
            guard let device = context.parameters.get("uuid").flatMap(UUID.init(uuidString:)) else {
                throw APIError.badRequest("uuid must be a device UUID")
            }
            let minted = auth.mintDeviceToken(for: device, lifetimeSeconds: deviceTokenLifetimeSeconds)
            let uuid = device.uuidString.lowercased()
            return jsonResponse(.ok, [
                "ok": .bool(true), "token": .string(minted.token), "device_uuid": .string(uuid),
                "expires_at": .integer(minted.expiresAt), "channels": .array([.string("device:\(uuid)")]),
            ])
        }
        admin.post("rest/v1/device_live_activity_message") { request, _ in try await writeMessage(request) }
        admin.get("v1/devices") { request, _ in
            let limit = try request.uri.queryParameters.wholeNumber("limit", default: 100, range: 1...1000)
            return try encodedResponse(.ok, try await store.devices(limit: limit))
        }
        admin.get("v1/deliveries") { request, _ in
            try encodedResponse(.ok, try await store.deliveries(try Self.deliveryFilter(request.uri.queryParameters)))
        }
        admin.get("v1/queue") { _, _ in try encodedResponse(.ok, try await store.queueSnapshot()) }
    }

    /// `GET …?device_uuid=eq.<uuid>`: the admin reads any row, a device token its own.
    func readMessage(_ request: Request) async throws -> Response {
        let caller = auth.caller(for: request)
        guard caller.isAdmin || caller.deviceUUID != nil else { throw APIError.unauthorized(caller) }
        var device: UUID?
        if let filter = request.uri.queryParameters.get("device_uuid") {
            // PostgREST's eq.<uuid>; a bare uuid means the same.
            guard let uuid = UUID(uuidString: filter.hasPrefix("eq.") ? String(filter.dropFirst(3)) : filter) else {
                throw APIError.badRequest("device_uuid must be eq.<uuid>")
            }
            device = uuid
        }
        if !caller.isAdmin {
            guard let own = caller.deviceUUID, device == own else {
                throw APIError.forbidden("a device token reads only its own row (device_uuid=eq.<its uuid>)")
            }
        }
        return try encodedResponse(.ok, try await store.messages(device: device))
    }

    /// `POST` one row or an array of rows; upsert with `Prefer: resolution=merge-duplicates` (else a duplicate is
    /// 409). A message too large for a push is refused by the database (400).
    func writeMessage(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: DeviceMessageBody.self)
        let merge = request.headers[HTTPField.Name("Prefer")!]?.contains("resolution=merge-duplicates") ?? false
        try await store.setMessages(body.rows.map {
            DeviceMessageWrite(device: $0.device, message: $0.message, updatedBy: $0.updatedBy ?? "rest")
        }, merge: merge)
        return jsonResponse(.created, ["ok": .bool(true)])
    }

    /// `?session_id=&status=&transport=&limit=`
    static func deliveryFilter(_ parameters: Parameters) throws -> DeliveryFilter {
        var filter = DeliveryFilter()
        filter.sessionID = try parameters.text("session_id").flatMap { $0.isEmpty ? nil : $0 }
        filter.status = try parameters.choice("status", as: DeliveryStatus.self)
        filter.transport = try parameters.choice("transport", as: LoggedTransport.self)
        filter.limit = try parameters.wholeNumber("limit", default: filter.limit, range: 1...500)
        return filter
    }
}
