import Foundation
import Hummingbird
import LiveRelayAPNs
import LiveRelayCore
import LiveRelayDelivery
import LiveRelayHTTP
import LiveRelayHTTPServer
import LiveRelayMetrics
import LiveRelayPostgres
import LiveRelayStore
import LiveRelayStream
import LiveRelayWebhooks
import Logging
import NIOPosix
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
        self.openAPIDocument = migrator.directory.flatMap {
            try? Data(contentsOf: $0.appendingPathComponent("openapi.json"))
        }
        self.dashboard = DashboardFiles(folder: migrator.directory?.appendingPathComponent("dashboard"))
    }

    /// `openapi.json` from the project folder (beside `migrations/`).
    let openAPIDocument: Data?
    /// The dashboard's files from the project folder.
    let dashboard: DashboardFiles

    /// Applies migrations (idempotent; serialised across relays by an advisory lock).
    /// - Parameter rollingBackFunctions: this release's `sql/` replaces a newer revision's (`liverelay dev`, whose
    ///   working copy is the truth when a developer checks out an older commit).
    public func migrate(rollingBackFunctions: Bool = false) async throws -> Migrator.Report {
        let report = try await connector.withConnection(logger: logger) { connection in
            try await migrator.run(on: connection, logger: logger, rollBack: rollingBackFunctions)
        }
        if !report.newer.isEmpty {
            logger.warning("""
                the database was migrated by a newer release of LiveRelay (it holds \
                \(MigrationError.listed(report.newer)), which this one does not have): its functions (sql/) are \
                left as that release wrote them; run that release, or a later one, on every relay
                """)
        }
        if let theirs = report.newerRevision {
            logger.warning("""
                the database's functions were written by a newer release of LiveRelay (sql/ revision \(theirs); \
                this one has \(migrator.revision?.number ?? 0)): they are left as that release wrote them; run that \
                release, or a later one, on every relay
                """)
        }
        return report
    }

    /// The HTTP API's routes over the given services.
    func makeAPI(listener: WakeupListener, hub: BroadcastHub, pool: PostgresClient, metrics: RelayMetrics,
                 credentialsMinted: @escaping @Sendable () -> [TransportKind: Int], auth: Authenticator,
                 presence: PresenceTracker? = nil) -> RelayAPI {
        var api = RelayAPI(
            migrator: migrator, listener: listener, hub: hub, pool: pool, metrics: metrics,
            credentialsMinted: credentialsMinted, auth: auth, defaultBundleID: configuration.defaultBundleID,
            openAPIDocument: openAPIDocument, dashboard: dashboard,
            webhookGuard: WebhookURLGuard(allowPrivate: configuration.delivery.allowPrivateWebhooks), logger: logger)
        api.presence = presence
        api.databaseProbe = ConnectionProbe(connector: connector, logger: logger)
        return api
    }

    /// "METHOD /path" of every route, with `{parameter}` as OpenAPI writes it (for the document's completeness test).
    public func routeSignatures() throws -> [String] {
        let listener = WakeupListener(connector: connector, logger: logger)
        return makeAPI(
            listener: listener, hub: BroadcastHub(connector: connector, listener: listener, logger: logger),
            pool: connector.makePool(logger: logger),
            metrics: RelayMetrics(),
            credentialsMinted: { [:] }, auth: Authenticator(adminToken: nil, tokenSecret: "unused")
        ).routeSignatures()
    }

    /// Writes the settings every relay of the database shares (the update budget, the widget window, the channels'
    /// defaults, the token secret's digest) in one statement, says which this relay changed, and returns the
    /// device-token secret: `LIVERELAY_TOKEN_SECRET`, or the one generated and kept in `relay_setting`. One connection,
    /// before the pool runs.
    func publishSettings() async throws -> String {
        let configured = configuration.tokenSecret
        let rows = RelaySettings.deliveryRows(
            priority10PerHour: configuration.delivery.priority10PerHour,
            widgetIntervalSeconds: configuration.delivery.widgetMinIntervalSeconds)
            + RelaySettings.ChannelDefaults(
                bundleID: configuration.defaultBundleID, fcmEnabled: configuration.fcm != nil).rows
        return try await connector.withConnection(logger: logger) { connection in
            let secret = if let configured {
                configured
            } else {
                try await RelaySettings.tokenSecret(candidate: randomHex(bytes: 32), on: connection, logger: logger)
            }
            let changes = try await RelaySettings.publish(
                rows + [RelaySettings.tokenSecretDigestRow(of: secret)], on: connection, logger: logger)
            // Said, not refused: a setting changed on purpose reads the same as two relays configured apart.
            for change in changes where change.name != RelaySettings.tokenSecretDigest {
                logger.notice("""
                    a setting every relay of this database shares changed: \(change.name) \(change.before) → \
                    \(change.after ?? "(unset)"); the relay that starts last decides it for all of them
                    """)
            }
            if changes.contains(where: { $0.name == RelaySettings.tokenSecretDigest }) {
                logger.warning("""
                    this relay signs device tokens with another secret than the relay of this database that started \
                    before it: tokens one mints, the other refuses (401, invalid_token). Give every relay the same \
                    LIVERELAY_TOKEN_SECRET, or none (then they share the one kept in the database); if the secret \
                    was changed on purpose, tokens minted before are no longer taken
                    """)
            }
            return secret
        }
    }

    /// How long SIGTERM may take before what is left is cancelled.
    public static let gracefulShutdownBudget = Duration.seconds(6)

    /// Runs until cancelled or until SIGTERM/SIGINT, then drains in-flight batches and stops.
    /// - Parameter onReady: called with the HTTP port once the server listens.
    public func run(handleSignals: Bool = true, onReady: (@Sendable (Int) async -> Void)? = nil) async throws {
        // A port another process holds stops start-up here, with one sentence, before any worker starts.
        try await ListenCheck.check(host: configuration.host, port: configuration.port)
        OpenFileLimit.raise(logger: logger)
        // The listener and the first worker share a loop: a wake-up rings that worker on the thread that read it.
        let loops = Array(MultiThreadedEventLoopGroup.singleton.makeIterator())
        let listener = WakeupListener(connector: connector, eventLoop: loops[0], logger: logger)
        let metrics = RelayMetrics()
        let transports = try makeTransports(loops: loops)
        let platforms = configuration.enabledPlatforms.map { "\($0.rawValue) (\($0.transport.rawValue))" }
        logger.notice("push services", metadata: ["platforms": "\(platforms.joined(separator: ", "))"])
        if !configuration.ignoredSettings.isEmpty {
            logger.warning("settings of a push service that is not configured are ignored", metadata: [
                "settings": "\(configuration.ignoredSettings.joined(separator: ", "))",
            ])
        }
        for unknown in configuration.unknownSettings {
            logger.warning("\(unknown.sentence); it is ignored")
        }
        if configuration.adminToken == nil {
            logger.warning("""
                LIVERELAY_ADMIN_TOKEN is not set: the admin routes, the dashboard and MCP answer 401 \
                (make one with `openssl rand -hex 24`)
                """)
        }
        // Not awaited: a token endpoint that is slow or refuses must not hold up start-up (shutdown ends it).
        let logger = self.logger
        Task { await transports.warmUp(logger) }
        let stop = StopSignal()
        let workers = transports.perWorker.enumerated().map { index, workerTransports in
            var workerLogger = logger
            workerLogger[metadataKey: "worker"] = "\(index)"
            return DeliveryWorker(
                connector: connector, listener: listener, transports: workerTransports,
                configuration: configuration.delivery, metrics: metrics, stop: stop,
                eventLoop: transports.loops[index], logger: workerLogger)
        }
        // As many webhook workers as delivery workers: chains are locked one sender each, so they share the queue
        // (one worker sent 2,951 events/s in B8, two 4,000–4,600).
        let webhooks = WebhookTransport(allowPrivate: configuration.delivery.allowPrivateWebhooks)
        let webhookWorkers = (0..<configuration.delivery.workers).map { _ in
            WebhookWorker(connector: connector, listener: listener, sender: webhooks,
                          configuration: configuration.delivery, metrics: metrics, logger: logger)
        }
        let sweeper = ActivitySweeper(
            connector: connector, maximumAgeSeconds: configuration.delivery.activityMaxAgeSeconds, logger: logger)
        let vacuum = QueueVacuum(connector: connector, logger: logger)
        // The hub on the other loop than the listener's: its reads run beside worker 0's claims and pushes, not
        // in front of them.
        let hub = BroadcastHub(connector: connector, listener: listener, logger: logger,
                               eventLoop: loops[1 % loops.count])
        // Which apps are open, shared with the cluster (not tracked when the policy is off).
        let presence = configuration.delivery.foregroundPolicy == .off
            ? nil : PresenceTracker(connector: connector, logger: logger)
        let pool = connector.makePool(logger: logger)
        let tokenSecret = try await publishSettings()
        let router = makeAPI(
            listener: listener, hub: hub, pool: pool, metrics: metrics, credentialsMinted: transports.credentialsMinted,
            auth: Authenticator(adminToken: configuration.adminToken, tokenSecret: tokenSecret), presence: presence
        ).makeRouter()
        let host = configuration.host
        // An idle connection is closed after 60 s (streams write a heartbeat every 10 s). A stream that opens its
        // connection is answered without a task per client (`StreamingHTTP1Channel`).
        let http = try HTTPService(
            router: router, http1: .init(idleTimeout: .seconds(60)), detachedPaths: [StreamRoutes.path],
            address: .hostname(host, port: configuration.port), serverName: "liverelay", logger: logger
        ) { channel in
            let port = channel.localAddress?.port ?? 0
            logger.notice("liverelay listening", metadata: [
                "address": "http://\(host):\(port)", "version": "\(LiveRelayVersion.current)",
            ])
            await onReady?(port)
        }
        var services: [any Service] = [pool, listener, hub, sweeper, vacuum]
        if configuration.delivery.wakeup == .auto {
            // On the listener's loop too: a commit read from the log rings worker 0 on the thread that read it.
            services.append(WALWatcher(
                connector: connector, listener: listener, eventLoop: loops[0],
                recheckRefused: .seconds(configuration.delivery.walRecheckSeconds), logger: logger))
        }
        if let presence { services.append(presence) }
        if let keepSeconds = configuration.delivery.deliveryLogRetentionSeconds {
            services.append(DeliveryLogRetention(connector: connector, keepSeconds: keepSeconds, logger: logger))
        }
        services += webhookWorkers
        services += workers
        services.append(http)
        services.append(StopOnShutdown { workers.forEach { $0.stopTakingBatches() } })
        var groupConfiguration = ServiceGroupConfiguration(
            services: services.map { .init(service: TracedService(inner: $0, logger: logger)) },
            gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
            cancellationSignals: [],
            logger: logger)
        // Graceful shutdown stops in reverse order: the workers are told to take no new batch, the HTTP server
        // stops (open streams end themselves, idle connections close, requests in flight finish), then the workers
        // finish the batches in flight, then the hub, the listener, the pool. Whatever still runs after the budget
        // (6 s) is cancelled, which rolls its batch back; cancelled services get 2 s to close their connections (a
        // loaded 2-core machine took over 1 s): the process ends within the 10 s a container engine allows before
        // SIGKILL.
        groupConfiguration.maximumGracefulShutdownDuration = Self.gracefulShutdownBudget
        groupConfiguration.maximumCancellationDuration = .seconds(2)
        let group = ServiceGroup(configuration: groupConfiguration)
        do {
            try await group.run()
        } catch {
            await transports.shutdown()
            await webhooks.shutdown()
            throw error
        }
        await transports.shutdown()
        await webhooks.shutdown()
    }
}
