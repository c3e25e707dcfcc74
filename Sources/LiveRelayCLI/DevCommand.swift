import APNsSimulator
import ArgumentParser
import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayPostgres
import LiveRelayServer
import LiveRelayStore
import LiveRelayDevSupport
import LiveRelayHTTPServer
import Logging
import ServiceLifecycle

struct DevCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev",
        abstract: """
            Run everything locally: a private PostgreSQL under .liverelay/, the APNs and FCM simulators, and the relay.
            """)

    @Option(help: "Folder for the cluster, keys and certificates.") var stateDirectory = ".liverelay"

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let logger = bootstrapLogging()
        let state = URL(fileURLWithPath: stateDirectory).standardizedFileURL.path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        DevStateLock.acquire(state: state)

        // APNs: the simulator unless real credentials are configured.
        let useSimulator = environment["APNS_KEY_ID"] == nil
        let keyPath = state + "/apns-key.p8"
        let key = try DevKeys.loadOrCreateKey(at: keyPath)
        let certificate = try SimulatorCertificate.generate()
        let caPath = state + "/apns-sim-ca.pem"
        try DevKeys.write(certificate.caPEM, to: caPath)
        let simulator = APNsSimulator(
            credentials: .init(publicKey: key.publicKey, keyID: "LRDEVKEY01", teamID: "LRDEVTEAM1"),
            certificate: certificate, channelsFile: URL(fileURLWithPath: state + "/apns-sim-channels.json"),
            logger: logger)
        let (simPorts, simPortSink) = AsyncStream.makeStream(of: Int.self)
        let simApp = try simulator.application(host: "127.0.0.1", port: 0) { port in
            simPortSink.yield(port)
            simPortSink.finish()
        }

        // FCM: the simulator unless a service account is configured.
        let useFCMSimulator = environment["FCM_SERVICE_ACCOUNT_FILE"] == nil
            && environment["FCM_SERVICE_ACCOUNT"] == nil
        let fcmSimulator = useFCMSimulator ? try DevFCMSimulator(state: state, logger: logger) : nil
        // An admin token for the dashboard and admin routes, made once and kept (unless one is configured).
        let adminToken = try environment["LIVERELAY_ADMIN_TOKEN"] ?? DevKeys.loadOrCreateSecret(
            at: state + "/admin-token")
        let relaySettings = DevRelaySettings(
            environment: environment, adminToken: adminToken, apnsSimulator: useSimulator ? (keyPath, caPath) : nil)

        // A bad setting, or a port another process holds, is said before the cluster is created or started: the
        // settings are read once with stand-ins for the addresses that exist only later (the cluster's and the
        // simulators'), and their address is tried (the relay tries it again as it starts).
        let trial: RelayConfiguration
        do {
            trial = try RelayConfiguration.fromEnvironment(try relaySettings.trial(fcmSimulator), files: LocalFiles())
        } catch {
            fail("\(error)")
        }
        do {
            try await ListenCheck.check(host: trial.host, port: trial.port)
        } catch {
            fail("liverelay: \(error)")
        }

        // PostgreSQL: created once, started now, stopped when we stop (the lock says no other `dev` uses it).
        let postgres = try startPostgres(state: state)
        defer { try? postgres.stop() }
        let databaseURL = environment["DATABASE_URL"] ?? postgres.url(database: "liverelay")
        if environment["DATABASE_URL"] == nil { try postgres.createDatabase("liverelay") }

        var simulatorServices: [any Service] = []
        if useSimulator { simulatorServices.append(simApp) } else { simPortSink.finish() }
        if let fcmSimulator { simulatorServices.append(fcmSimulator.app) }
        var simulatorConfiguration = ServiceGroupConfiguration(
            services: simulatorServices, gracefulShutdownSignals: [], logger: logger)
        simulatorConfiguration.maximumGracefulShutdownDuration = .seconds(2)
        let simulators = ServiceGroup(configuration: simulatorConfiguration)

        try await withThrowingTaskGroup(of: Void.self) { group in
            if !simulatorServices.isEmpty { group.addTask { try await simulators.run() } }
            var simPort: Int?
            for await port in simPorts { simPort = port }
            var fcmPort: Int?
            var fcmSettings: [String: String] = [:]
            if let fcmSimulator {
                for await port in fcmSimulator.ports { fcmPort = port }
                if let fcmPort { fcmSettings = try fcmSimulator.relayEnvironment(port: fcmPort) }
            }
            let configuration: RelayConfiguration
            do {
                let settings = relaySettings.environment(databaseURL: databaseURL, apnsSimulatorPort: simPort)
                configuration = try RelayConfiguration.fromEnvironment(
                    settings.merging(fcmSettings) { $1 }, files: LocalFiles())
            } catch {
                // (Checked before the cluster started; a file changed since.) Through the `defer` that stops
                // PostgreSQL (`fail` would exit without it), simulators stopped.
                try await stop(simulators, in: &group, saying: "\(error)")
            }
            let server = try RelayServer(configuration: configuration, migrator: try loadMigrator(), logger: logger)
            _ = try await server.migrate(rollingBackFunctions: true)
            let channelDefaults = RelaySettings.ChannelDefaults(
                bundleID: configuration.defaultBundleID, fcmEnabled: configuration.fcm != nil)
            try await seedDemo(databaseURL: databaseURL, channelDefaults: channelDefaults, logger: logger)
            let shownSimPort = useSimulator ? simPort : nil
            let shownFCMPort = fcmPort
            let tokenFile = environment["LIVERELAY_ADMIN_TOKEN"] == nil ? state + "/admin-token" : nil
            let watch = Task { await DevPostgresWatch(postgres: postgres).run() }
            group.addTask {
                try await server.run { port in
                    printWelcome(httpPort: port, databaseURL: databaseURL, simPort: shownSimPort, fcmPort: shownFCMPort,
                                 adminToken: adminToken, tokenFile: tokenFile)
                }
            }
            // The relay returns on Ctrl-C (graceful shutdown); then the simulators shut down gracefully too, closing
            // their connections rather than being cancelled (which their servers log as an error).
            var failure: (any Error)?
            do { try await group.next() } catch { failure = error }
            // The watch ends before the cluster is stopped on the way out, so that it cannot start it again.
            watch.cancel()
            await watch.value
            if let unavailable = failure as? ListenCheck.Unavailable {
                try await stop(simulators, in: &group, saying: "liverelay: \(unavailable)")
            } else if let failure {
                throw failure
            }
            await simulators.triggerGracefulShutdown()
            try await group.waitForAll()
        }
    }

    /// Ends `run` on a problem the user must fix, with its sentence: the simulators stop gracefully (a cancelled
    /// server logs an error), and `run`'s `defer` stops PostgreSQL, which `fail` would skip by exiting at once.
    private func stop(
        _ simulators: ServiceGroup, in group: inout ThrowingTaskGroup<Void, any Error>, saying message: String
    ) async throws -> Never {
        await simulators.triggerGracefulShutdown()
        try? await group.waitForAll()
        FileHandle.standardError.write(Data("\(message)\n".utf8))
        throw ExitCode.failure
    }

    private func startPostgres(state: String) throws -> LocalPostgres {
        var dataDirectory = state + "/pg"
        if !LocalPostgres.serverUserCanReach(state) {
            // The postgres user cannot enter this project folder (for example a private temp folder):
            // keep the cluster where it can, and leave a pointer in .liverelay/.
            let fallback = "/var/tmp/liverelay-" + String(sha256Hex(state).prefix(12))
            try FileManager.default.createDirectory(atPath: fallback, withIntermediateDirectories: true)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fallback)
            try? Data((fallback + "/pg\n").utf8).write(to: URL(fileURLWithPath: state + "/pg-location"))
            dataDirectory = fallback + "/pg"
        }
        let portFile = state + "/pg-port"
        let savedPort = (try? String(contentsOfFile: portFile, encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        let port = savedPort ?? LocalPostgres.freePort()
        try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: portFile))
        let postgres = try LocalPostgres(dataDirectory: dataDirectory, port: port)
        if !postgres.isInitialized {
            print("creating a PostgreSQL cluster in \(dataDirectory) …")
            fflush(nil)
        }
        try postgres.initializeIfNeeded()
        try postgres.start()
        return postgres
    }

    /// The demo rows. The channels' defaults are published first (the relay does it again when it starts), so that
    /// the demo channel's first state is queued for the FCM topic too.
    private func seedDemo(databaseURL: String, channelDefaults: RelaySettings.ChannelDefaults,
                          logger: Logger) async throws {
        let connector = try DatabaseConnector(url: databaseURL)
        try await connector.withConnection(logger: logger) { connection in
            _ = try await RelaySettings.publish(channelDefaults.rows, on: connection, logger: logger)
            let hash = secretHash(DevDemo.secret)
            try await connection.query("""
                INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env,
                                                   device_uuid, attributes_type, attributes, content_state)
                VALUES (\(hash), \(DevDemo.sessionID), \(DevDemo.activityToken), \(DevDemo.bundleID), 'sandbox',
                        \(DevDemo.deviceUUID)::uuid, 'SessionActivityAttributes', '{"sessionId": "demo-session"}',
                        '{"status": "working", "sessionTitle": "Demo", "lastMessage": "Starting", "retryInfo": null}')
                ON CONFLICT (secret_hash, session_id) DO NOTHING
                """, logger: logger)
            // The Android phone beside the iPhone: same session, its own secret (one activity per secret and session).
            try await connection.query("""
                INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, platform,
                                                   device_uuid, attributes_type, attributes, content_state)
                VALUES (\(secretHash(DevDemo.androidSecret)), \(DevDemo.sessionID), \(DevDemo.androidToken),
                        \(DevDemo.androidPackage), 'android', \(DevDemo.androidDeviceUUID)::uuid,
                        'SessionActivityAttributes', '{"sessionId": "demo-session"}',
                        '{"status": "working", "sessionTitle": "Demo", "lastMessage": "Starting", "retryInfo": null}')
                ON CONFLICT (secret_hash, session_id) DO NOTHING
                """, logger: logger)
            // The two phones as devices, by name: the dashboard's Devices and the MCP tools find them.
            try await connection.query("""
                INSERT INTO device_registration (secret_hash, device_token, bundle_id, apns_env, platform, device_uuid,
                                                 device_name)
                VALUES (\(hash), \(DevDemo.deviceToken), \(DevDemo.bundleID), 'sandbox', 'ios',
                        \(DevDemo.deviceUUID)::uuid, 'Demo iPhone'),
                       (\(secretHash(DevDemo.androidSecret)), \(DevDemo.androidDeviceToken), \(DevDemo.androidPackage),
                        'production', 'android', \(DevDemo.androidDeviceUUID)::uuid, 'Demo Android')
                ON CONFLICT (secret_hash, device_token) DO NOTHING
                """, logger: logger)
            // The iPhone's push-to-start token for the channel's type: the printed start reaches it (iOS 18).
            try await connection.query("""
                INSERT INTO device_push_to_start (device_id, attributes_type, token)
                SELECT id, 'MatchAttributes', \(DevDemo.matchStartToken) FROM device_registration
                WHERE device_uuid = \(DevDemo.deviceUUID)::uuid AND platform = 'ios'
                ON CONFLICT (device_id, attributes_type) DO NOTHING
                """, logger: logger)
            // A broadcast channel: one UPDATE reaches every subscriber (Apple broadcast, FCM topic, SSE). A demo
            // channel that failed (one a simulator without --channels-file forgot when dev ran again) is made anew,
            // so the printed UPDATE works; deleting a failed row sends nothing.
            try await connection.query("""
                DELETE FROM broadcast_channel WHERE name = \(DevDemo.channelName) AND status = 'failed'
                """, logger: logger)
            try await connection.query("""
                INSERT INTO broadcast_channel (name, bundle_id, apns_env, attributes_type, content_state)
                VALUES (\(DevDemo.channelName), \(DevDemo.bundleID), 'sandbox', 'MatchAttributes',
                        '{"home": 0, "away": 0, "minute": 0}')
                ON CONFLICT (name) DO NOTHING
                """, logger: logger)
        }
    }
}

/// The demo activity `liverelay dev` registers.
enum DevDemo {
    static let secret = "liverelay-demo-secret"
    static let sessionID = "demo-session"
    static let activityToken = String(repeating: "deadbeef", count: 8)
    static let bundleID = "dev.liverelay.demo"
    static let deviceUUID = "00000000-0000-4000-8000-000000000001"
    static let deviceToken = String(repeating: "cafebabe", count: 8)
    /// The iPhone's push-to-start token for the demo channel's `MatchAttributes`.
    static let matchStartToken = String(repeating: "5ca1ab1e", count: 8)
    static let androidSecret = "liverelay-demo-android-secret"
    /// An FCM registration token's shape: a 22-character instance ID, a colon, a long opaque part.
    static let androidToken = "dLrDemoAndroid00000001:APA91b" + String(repeating: "LiveRelayDemo", count: 10)
    static let androidPackage = "dev.liverelay.demo"
    static let androidDeviceUUID = "00000000-0000-4000-8000-000000000002"
    static let androidDeviceToken = "dLrDemoAndroid00000002:APA91b" + String(repeating: "LiveRelayDevice", count: 9)
    static let fcmProjectID = "liverelay-dev"
    static let channelName = "demo-match"
}

private func printWelcome(httpPort: Int, databaseURL: String, simPort: Int?, fcmPort: Int?, adminToken: String,
                          tokenFile: String?) {
    var lines = [
        "",
        "LiveRelay is running. Ctrl-C stops the relay, the simulators and PostgreSQL.",
        // The token travels in the fragment: the browser never sends it, so it reaches no server log.
        "  Dashboard: http://127.0.0.1:\(httpPort)/#token=\(adminToken)",
        "  Admin:     Authorization: Bearer \(adminToken)" + (tokenFile.map { "  (kept in \($0))" } ?? ""),
        "  Relay:     http://127.0.0.1:\(httpPort)/  (health: /health, readiness: /ready)",
        "  psql:      psql \"\(databaseURL)\"",
        "  MCP:       POST http://127.0.0.1:\(httpPort)/mcp with the admin token, or over stdio:"
            + " DATABASE_URL=\"\(databaseURL)\" liverelay mcp",
    ]
    if let simPort {
        lines.append(
            "  APNs sim:  https://127.0.0.1:\(simPort)  (every accepted push is printed below as 'apns-sim: 200 …')")
    }
    if let fcmPort {
        let shown = "every accepted message is printed below as 'fcm-sim: 200 …'"
        lines.append("  FCM sim:   https://127.0.0.1:\(fcmPort)  (\(shown))")
    }
    lines += [
        "",
        "Paste this into psql and watch the iPhone's push and the Android phone's message arrive:",
        "  UPDATE activity_registration SET content_state = '{\"status\": \"working\", \"sessionTitle\": \"Demo\", "
            + "\"lastMessage\": \"Hello from SQL\", \"retryInfo\": null}' WHERE session_id = '\(DevDemo.sessionID)';",
        "",
        "And this one to reach every subscriber of the demo broadcast channel at once ('apns-sim: 200 broadcast …'):",
        "  UPDATE broadcast_channel SET content_state = '{\"home\": 1, \"away\": 0, \"minute\": 23}'"
            + " WHERE name = '\(DevDemo.channelName)';",
        "",
        "And this one starts, on the iPhone, a Live Activity that follows the channel (iOS 18 push-to-start):",
        "  SELECT liverelay_start_channel('\(DevDemo.channelName)', ARRAY['\(DevDemo.deviceUUID)']::uuid[],"
            + " '{\"home\": \"Lions\", \"away\": \"Tigers\"}',"
            + " '{\"title\": \"Kick-off\", \"body\": \"Lions v Tigers\"}');",
        "",
    ]
    print(lines.joined(separator: "\n"))
    fflush(nil)
}
