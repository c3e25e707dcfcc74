import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayMCP
import LiveRelayMetrics
import LiveRelayPostgres
import LiveRelayStore
import LiveRelayStream
import Logging
import PostgresNIO

/// Every route of the relay: the relay API, the stream, admin and dashboard routes, health and metrics.
public struct RelayAPI: Sendable {
    public var migrator: Migrator
    public var listener: WakeupListener
    public var hub: BroadcastHub
    public var pool: PostgresClient
    public var metrics: RelayMetrics
    /// Credentials minted per transport, for `/metrics`.
    public var credentialsMinted: @Sendable () -> [TransportKind: Int]
    public var auth: Authenticator
    public var defaultBundleID: String?
    /// `openapi.json` from the project folder (beside `migrations/`).
    public var openAPIDocument: Data?
    /// The dashboard's files (`dashboard/` in the project folder).
    public var dashboard: DashboardFiles
    /// Which webhook URLs may be registered.
    public var webhookGuard: any WebhookURLCheck
    /// Tells the cluster which apps are open (nil with `LIVERELAY_FOREGROUND_PUSH=off`).
    public var presence: PresenceTracker?
    /// Says whether PostgreSQL can be reached when a request has waited a second for the pool: when it cannot, the
    /// request answers 503 "the database cannot be reached" then, rather than "did not answer in time" after 10 s.
    /// (The reason, which names the database's address, stays in the relay's log.)
    public var databaseProbe: ConnectionProbe?
    public var logger: Logger

    public init(migrator: Migrator, listener: WakeupListener, hub: BroadcastHub, pool: PostgresClient,
                metrics: RelayMetrics, credentialsMinted: @escaping @Sendable () -> [TransportKind: Int],
                auth: Authenticator, defaultBundleID: String?, openAPIDocument: Data?,
                dashboard: DashboardFiles, webhookGuard: any WebhookURLCheck, logger: Logger) {
        self.migrator = migrator
        self.listener = listener
        self.hub = hub
        self.pool = pool
        self.metrics = metrics
        self.credentialsMinted = credentialsMinted
        self.auth = auth
        self.defaultBundleID = defaultBundleID
        self.openAPIDocument = openAPIDocument
        self.dashboard = dashboard
        self.webhookGuard = webhookGuard
        self.logger = logger
    }

    public func makeRouter() -> Router<BasicRequestContext> {
        var store = RelayStore(client: pool, logger: logger)
        if let probe = databaseProbe {
            store.diagnose = { await probe.problem() == nil ? nil : "the database cannot be reached" }
        }
        let health = HealthCheck(store: store, migrator: migrator, listener: listener, hub: hub, logger: logger)
        let router = Router()
        let table = RouteTable()
        router.add(middleware: JSONErrorMiddleware(routes: table))
        HealthRoutes(health: health).register(on: router)
        RelayRoutes(store: store, defaultBundleID: defaultBundleID).register(on: router)
        StreamRoutes(hub: hub, auth: auth, store: store, presence: presence).register(on: router)
        WidgetRoutes(auth: auth, store: store).register(on: router)
        let adminRoutes = AdminRoutes(auth: auth, store: store)
        adminRoutes.register(on: router)
        MetricsRoutes(metrics: metrics, store: store, hub: hub, credentialsMinted: credentialsMinted)
            .register(on: router)
        DocumentRoutes(openAPI: openAPIDocument, dashboard: dashboard).register(on: router)
        let channelRoutes = ChannelRoutes(store: store, auth: auth)
        channelRoutes.register(on: router)
        // Everything below needs the admin token, checked once for the group.
        let admin = router.group().add(middleware: AdminOnly<BasicRequestContext>(auth: auth))
        adminRoutes.register(admin: admin)
        ViewRoutes(store: store).register(on: admin)
        LiveActivityRoutes(store: store, defaultBundleID: defaultBundleID).register(on: admin)
        channelRoutes.register(admin: admin)
        let mcp = router.group().add(middleware: AdminOnly<BasicRequestContext>(auth: auth, challengeEveryone: true))
        MCPRoutes(tools: RelayTools(store: store, logger: logger), logger: logger).register(on: mcp)
        WebhookRoutes(store: store, urlGuard: webhookGuard).register(on: admin)
        table.set(router.routes.map { ($0.path.description, $0.method.rawValue) })
        return router
    }

    /// "METHOD /path" of every route, with `{parameter}` as OpenAPI writes it (for the document's completeness test).
    public func routeSignatures() -> [String] {
        makeRouter().routes.map { route in
            let path = "/" + route.path.description.split(separator: "/").map { part in
                part.hasPrefix(":") ? "{\(part.dropFirst())}" : String(part)
            }.joined(separator: "/")
            return "\(route.method.rawValue) \(path)"
        }
    }
}
