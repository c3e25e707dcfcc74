import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayPostgres
import Logging
import NIOCore

/// What `/ready` checks: the database answers, migrations are applied, the wake-up listener is connected.
public struct HealthCheck: Sendable {
    let database: RouteDatabase
    let migrator: Migrator
    let listener: WakeupListener
    let hub: BroadcastHub
    let logger: Logger

    /// The checks by name, each true or false.
    func readiness() async -> [String: Bool] {
        var quick = database
        quick.deadline = .seconds(2)
        let migrator = self.migrator, logger = self.logger
        let migrated = try? await quick.withConnection { connection in
            try await migrator.isUpToDate(on: connection, logger: logger)
        }
        return ["database": migrated != nil, "migrations": migrated == true, "listener": listener.isConnected, "stream": hub.isStarted]
    }
}

/// `GET /health` (liveness, no dependencies) and `GET /ready`.
struct HealthRoutes: Sendable {
    let health: HealthCheck

    func register(on router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in
            jsonResponse(.ok, ["ok": .bool(true), "service": .string("liverelay")])
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

/// A JSON response from members.
func jsonResponse(_ status: HTTPResponse.Status, _ members: [String: JSONValue]) -> Response {
    Response(
        status: status,
        headers: [.contentType: "application/json"],
        body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(members).compactBytes)))
}
