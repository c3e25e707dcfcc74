import Foundation
import Hummingbird
import LiveRelayAPNs
import LiveRelayCore
import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle

/// The composition root of `liverelay serve`: listener, delivery workers and the HTTP API in one `ServiceGroup`.
public struct RelayServer: Sendable {
    public let configuration: RelayConfiguration
    public let logger: Logger
    let connector: DatabaseConnector
    let migrator: Migrator

    /// Checks what can be checked before anything starts: the database URL and the SQL files.
    public init(configuration: RelayConfiguration, migrator: Migrator, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.migrator = migrator
        self.connector = try DatabaseConnector(url: configuration.databaseURL)
    }

    /// Applies migrations (idempotent; serialised across relays by an advisory lock).
    public func migrate() async throws -> Migrator.Report {
        try await connector.withConnection(logger: logger) { connection in
            try await migrator.run(on: connection, logger: logger)
        }
    }

    /// Runs until cancelled or until SIGTERM/SIGINT, then drains in-flight batches and stops.
    /// - Parameter onReady: called with the HTTP port once the server listens.
    public func run(handleSignals: Bool = true, onReady: (@Sendable (Int) async -> Void)? = nil) async throws {
        let listener = WakeupListener(connector: connector, logger: logger)
        let tokens = try ProviderTokenSource(
            teamID: configuration.apns.teamID, keyID: configuration.apns.keyID, privateKeyPEM: configuration.apns.privateKeyPEM)
        let apns = try APNsClient(configuration: configuration.apns, tokens: tokens)
        let sender = PushSender(client: apns, logger: logger)
        let workers = (0..<configuration.delivery.workers).map { index in
            var workerLogger = logger
            workerLogger[metadataKey: "worker"] = "\(index)"
            return DeliveryWorker(
                connector: connector, listener: listener, sender: sender, configuration: configuration.delivery, logger: workerLogger)
        }
        let health = HealthCheck(connector: connector, migrator: migrator, listener: listener, logger: logger)
        let router = Router()
        HealthRoutes(health: health).register(on: router)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "liverelay"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                self.logger.notice("liverelay listening", metadata: ["address": "http://\(self.configuration.host):\(port)"])
                await onReady?(port)
            },
            logger: logger
        )
        var services: [any Service] = [listener]
        services += workers
        services.append(app)
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0) },
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
            cancellationSignals: [],
            logger: logger))
        do {
            try await group.run()
        } catch {
            try? await apns.shutdown()
            throw error
        }
        try? await apns.shutdown()
    }
}
