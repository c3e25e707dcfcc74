import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore
import PostgresNIO

/// Device tokens and the device message REST endpoint (PostgREST-style, as the seed's raw REST).
struct AdminRoutes: Sendable {
    let auth: Authenticator
    let database: RouteDatabase
    /// Lifetime of a minted device token.
    var deviceTokenLifetimeSeconds: Int64 = 30 * 86_400

    func register(on router: Router<BasicRequestContext>) {
        router.post("v1/devices/:uuid/token") { request, context in
            try auth.requireAdmin(request)
            guard let device = context.parameters.get("uuid").flatMap(UUID.init(uuidString:)) else {
                throw APIError.badRequest("uuid must be a device UUID")
            }
            let minted = auth.mintDeviceToken(for: device, lifetimeSeconds: deviceTokenLifetimeSeconds)
            return jsonResponse(.ok, [
                "ok": .bool(true), "token": .string(minted.token), "device_uuid": .string(device.uuidString.lowercased()),
                "expires_at": .integer(minted.expiresAt), "channels": .array([.string("device:\(device.uuidString.lowercased())")]),
            ])
        }
        router.get("rest/v1/device_live_activity_message") { request, _ in try await readMessage(request) }
        router.post("rest/v1/device_live_activity_message") { request, _ in try await writeMessage(request) }
    }

    /// `GET …?device_uuid=eq.<uuid>`: the admin reads any row, a device token its own.
    func readMessage(_ request: Request) async throws -> Response {
        let caller = auth.caller(for: request)
        guard caller.isAdmin || caller.deviceUUID != nil else { throw APIError.unauthorized }
        var device: UUID?
        if let filter = request.uri.queryParameters.get("device_uuid") {
            guard filter.hasPrefix("eq."), let uuid = UUID(uuidString: String(filter.dropFirst(3))) else {
                throw APIError.badRequest("device_uuid must be eq.<uuid>")
            }
            device = uuid
        }
        if !caller.isAdmin {
            guard let own = caller.deviceUUID, device == own else { throw APIError.forbidden("a device token reads only its own row (device_uuid=eq.<its uuid>)") }
        }
        let filter = device
        let rows = try await database.rows("""
            SELECT json_build_object('device_uuid', device_uuid, 'message', message, 'updated_at', updated_at, 'updated_by', updated_by)::text
            FROM device_live_activity_message WHERE \(filter)::uuid IS NULL OR device_uuid = \(filter) ORDER BY device_uuid LIMIT 1000
            """, as: String.self).map { try JSONValue(parsing: $0) }
        return Response(status: .ok, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.array(rows).compactBytes)))
    }

    /// `POST` one row or an array of rows; upsert (`Prefer: resolution=merge-duplicates`). Admin only.
    func writeMessage(_ request: Request) async throws -> Response {
        try auth.requireAdmin(request)
        let buffer = try await request.body.collect(upTo: JSONBody.maximumSize)
        guard let value = try? JSONValue(parsing: String(buffer: buffer)) else { throw APIError.badRequest("the body must be JSON") }
        let items: [JSONValue]
        switch value {
        case .object: items = [value]
        case .array(let array) where !array.isEmpty && array.count <= 1000: items = array
        default: throw APIError.badRequest("the body must be an object or an array of 1 to 1000 objects")
        }
        var devices: [UUID] = []
        var messages: [String] = []
        var authors: [String] = []
        for item in items {
            let body = JSONBody(members: item.objectValue ?? [:])
            guard let device = UUID(uuidString: try body.string("device_uuid", maxLength: 64)) else {
                throw APIError.badRequest("device_uuid must be a UUID")
            }
            guard case .string(let message)? = body.members["message"] else { throw APIError.badRequest("message is required (a string; \"\" clears it)") }
            guard message.utf8.count <= 4096 else { throw APIError.badRequest("message is longer than 4096 bytes") }
            devices.append(device)
            messages.append(message)
            authors.append(try body.optionalString("updated_by", maxLength: 255) ?? "rest")
        }
        let merge = request.headers[HTTPField.Name("Prefer")!]?.contains("resolution=merge-duplicates") ?? false
        let ids = devices, texts = messages, by = authors
        // A duplicate without merge (409) or a message too large for a push (400) is refused by the database.
        if merge {
            try await database.execute("""
                INSERT INTO device_live_activity_message (device_uuid, message, updated_by)
                SELECT * FROM unnest(\(ids)::uuid[], \(texts)::text[], \(by)::text[])
                ON CONFLICT (device_uuid) DO UPDATE SET message = excluded.message, updated_by = excluded.updated_by
                """)
        } else {
            try await database.execute("""
                INSERT INTO device_live_activity_message (device_uuid, message, updated_by)
                SELECT * FROM unnest(\(ids)::uuid[], \(texts)::text[], \(by)::text[])
                """)
        }
        return Response(status: .created, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(string: #"{"ok":true}"#)))
    }
}
