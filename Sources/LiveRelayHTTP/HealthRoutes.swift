import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayStream
import LiveRelayCore
import LiveRelayStore
import LiveRelayPostgres
import Logging
import NIOCore

/// What `/ready` checks: the database answers, migrations are applied, the wake-up listener is connected.
public struct HealthCheck: Sendable {
    let store: RelayStore
    let migrator: Migrator
    let listener: WakeupListener
    let hub: BroadcastHub
    let logger: Logger

    /// The checks by name, each true or false.
    func readiness() async -> [String: Bool] {
        var quick = store
        quick.deadline = .seconds(2)
        let migrator = self.migrator, logger = self.logger
        let migrated = try? await quick.withConnection { connection in
            try await migrator.isUpToDate(on: connection, logger: logger)
        }
        return [
            "database": migrated != nil, "migrations": migrated == true, "listener": listener.isConnected,
            "stream": hub.isStarted,
        ]
    }

    /// Registered devices and delivery-log rows, as the original relay's `/health` reports them; nil when the database
    /// does not answer within a second. A table is counted exactly while it is small and estimated from the planner's
    /// statistics beyond 100,000 rows, so a health probe never scans a large table.
    func counts() async -> (devices: Int64, deliveries: Int64)? {
        var quick = store
        quick.deadline = .seconds(1)
        return try? await quick.healthCounts()
    }
}

/// `GET /health` (liveness: 200 while the process serves HTTP, with the original relay's counts when the database
/// answers) and `GET /ready` (every dependency).
struct HealthRoutes: Sendable {
    let health: HealthCheck

    func register(on router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in
            var members: [String: JSONValue] = [
                "ok": .bool(true), "service": .string("liverelay"), "version": .string(LiveRelayVersion.current),
            ]
            if let counts = await health.counts() {
                members["devices"] = .integer(counts.devices)
                members["deliveries"] = .integer(counts.deliveries)
            }
            return jsonResponse(.ok, members)
        }
        router.get("ready") { _, _ in
            let checks = await health.readiness()
            let ready = checks.values.allSatisfy { $0 }
            return jsonResponse(ready ? .ok : .serviceUnavailable, [
                "ok": .bool(ready), "checks": .object(checks.mapValues { .bool($0) }),
            ])
        }
    }
}

/// A JSON response from members. A 401 says which scheme to use (RFC 6750).
func jsonResponse(_ status: HTTPResponse.Status, _ members: [String: JSONValue]) -> Response {
    var headers: HTTPFields = [.contentType: "application/json"]
    if status == .unauthorized { headers[.wwwAuthenticate] = #"Bearer realm="liverelay""# }
    return Response(
        status: status, headers: headers,
        body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(members).compactBytes)))
}

/// A response whose body is an `Encodable` value as JSON.
func encodedResponse(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.withoutEscapingSlashes]
    return Response(status: status, headers: [.contentType: "application/json"],
                    body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value))))
}
