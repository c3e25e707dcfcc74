import APNsSimulator
import Crypto
import Foundation
import LiveRelayCore
import LiveRelayDevSupport
import LiveRelayPostgres
import LiveRelayServer
import Logging
import PostgresNIO
import Testing

/// A database of its own, an APNs simulator over HTTP/2 + TLS, and relays run in-process or as processes.
struct Harness: Sendable {
    static let teamID = "TESTTEAM01"
    static let keyID = "TESTKEY001"
    static let bundleID = "dev.liverelay.tests"
    static let adminToken = "test-admin-token-0123456789"

    let databaseURL: String
    let simulator: APNsSimulator
    let simulatorPort: Int
    let keyPEM: String
    let caFile: String
    let logger: Logger

    /// Starts the simulator, runs `body`, then stops the simulator (in one of the `TestSlots`).
    static func with(databaseURL: String? = nil, _ body: @Sendable (Harness) async throws -> Void) async throws {
        try await TestSlots.shared.run { try await withoutSlot(databaseURL: databaseURL, body) }
    }

    private static func withoutSlot(databaseURL: String?, _ body: @Sendable (Harness) async throws -> Void)
        async throws {
        var logger = Logger(label: "test")
        logger.logLevel =
            ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        let databaseURL = if let databaseURL { databaseURL } else { try await Blocking.run(TestCluster.newDatabase) }
        let key = P256.Signing.PrivateKey()
        let certificate = try SimulatorCertificate.generate()
        let caFile = NSTemporaryDirectory() + "liverelay-test-ca-\(UUID().uuidString).pem"
        try Data(certificate.caPEM.utf8).write(to: URL(fileURLWithPath: caFile))
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let simulator = APNsSimulator(
            credentials: .init(publicKey: key.publicKey, keyID: keyID, teamID: teamID), certificate: certificate,
            printPushes: false, logger: logger)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let app = try simulator.application(host: "127.0.0.1", port: 0) { port in
            portSink.yield(port)
            portSink.finish()
        }
        try await withGracefulService(app, logger: logger) {
            var port = 0
            for await value in ports { port = value }
            let harness = Harness(
                databaseURL: databaseURL, simulator: simulator, simulatorPort: port, keyPEM: key.pemRepresentation,
                caFile: caFile, logger: logger)
            try await harness.migrate()
            try await body(harness)
        }
    }

    /// The relay's environment, as a user would set it.
    var relayEnvironment: [String: String] {
        [
            "DATABASE_URL": databaseURL,
            "APNS_TEAM_ID": Self.teamID,
            "APNS_KEY_ID": Self.keyID,
            "APNS_PRIVATE_KEY": keyPEM.replacingOccurrences(of: "\n", with: "\\n"),
            "APNS_PRODUCTION_URL": "https://127.0.0.1:\(simulatorPort)",
            "APNS_SANDBOX_URL": "https://localhost:\(simulatorPort)/sandbox",
            "APNS_CHANNELS_PRODUCTION_URL": "https://localhost:\(simulatorPort)",
            "APNS_CHANNELS_SANDBOX_URL": "https://localhost:\(simulatorPort)/sandbox",
            "APNS_CA_FILE": caFile,
            "PORT": "0",
            "LIVERELAY_POLL_INTERVAL_MS": "200",
            "LIVERELAY_ADMIN_TOKEN": Self.adminToken,
            "APNS_DEFAULT_BUNDLE_ID": Self.bundleID,
        ]
    }

    /// The environment of a `liverelay` process for this harness: ours, the relay's settings, the project's SQL.
    var relayProcessEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.merging(relayEnvironment) { $1 }
        environment["LIVERELAY_SQL_DIR"] = Self.projectRoot.path
        return environment
    }

    func migrate() async throws {
        let connector = try DatabaseConnector(url: databaseURL)
        let migrator = try Migrator(directory: Self.projectRoot)
        _ = try await connector.withConnection(logger: logger) { connection in
            try await migrator.run(on: connection, logger: logger)
        }
    }

    /// Runs an in-process relay while `body` runs; `configure` changes what no environment setting reaches.
    func withRelay(
        environment extra: [String: String] = [:], configure: (inout RelayConfiguration) -> Void = { _ in },
        _ body: @Sendable () async throws -> Void
    ) async throws {
        try await withRelayPort(environment: extra, configure: configure) { _ in try await body() }
    }

    /// Runs an in-process relay while `body` runs with its HTTP port.
    func withRelayPort(
        environment extra: [String: String] = [:], configure: (inout RelayConfiguration) -> Void = { _ in },
        _ body: @Sendable (Int) async throws -> Void
    ) async throws {
        var configuration = try RelayConfiguration.fromEnvironment(
            relayEnvironment.merging(extra) { $1 }, files: LocalFiles())
        configure(&configuration)
        let server = try RelayServer(
            configuration: configuration, migrator: try Migrator(directory: Self.projectRoot), logger: logger)
        let (ready, readySink) = AsyncStream.makeStream(of: Int.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await server.run(handleSignals: false) { port in
                    readySink.yield(port)
                    readySink.finish()
                }
            }
            var port = 0
            for await value in ready { port = value }
            do {
                try await body(port)
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }

    /// Runs SQL on a fresh connection.
    func sql(_ query: PostgresQuery) async throws {
        let connector = try DatabaseConnector(url: databaseURL)
        _ = try await connector.withConnection(logger: logger) { connection in
            try await connection.query(query, logger: logger)
        }
    }

    /// Runs `body` with one connection (for many writes in a row).
    func withConnection(_ body: (PostgresConnection) async throws -> Void) async throws {
        let connector = try DatabaseConnector(url: databaseURL)
        try await connector.withConnection(logger: logger) { connection in try await body(connection) }
    }

    /// Runs SQL and decodes its rows.
    func rows<Row: Sendable>(_ query: PostgresQuery, as type: Row.Type) async throws -> [Row]
    where Row: PostgresDecodable {
        let connector = try DatabaseConnector(url: databaseURL)
        return try await connector.withConnection(logger: logger) { connection in
            var rows: [Row] = []
            for try await row in try await connection.query(query, logger: logger).decode(Row.self) { rows.append(row) }
            return rows
        }
    }

    /// Registers an activity directly in SQL, as a writer would; returns its token.
    @discardableResult
    func registerActivity(session: String, token: String? = nil, device: UUID? = nil, env: String = "production",
                          state: String = #"{"status": "working"}"#) async throws -> String {
        let token = token ?? randomToken()
        try await sql("""
            INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id, apns_env,
                                               device_uuid, content_state)
            VALUES (\(secretHash("test-secret")), \(session), \(token), \(Self.bundleID), \(env), \(device),
                    \(state)::jsonb)
            """)
        return token
    }

    /// Waits until the simulator has recorded pushes satisfying `condition`, or fails after `timeout`.
    @discardableResult
    func waitForPushes(timeout: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation,
                       _ condition: ([RecordedPush]) -> Bool) async throws -> [RecordedPush] {
        if try await pollUntil(timeout: timeout, { condition(simulator.pushes()) }) { return simulator.pushes() }
        let pushes = simulator.pushes()
        Issue.record("timed out waiting for pushes; \(pushes.count) recorded, responses \(simulator.responseCounts())",
                     sourceLocation: sourceLocation)
        throw TimedOut()
    }

    /// Waits until a query returns true.
    func waitUntil(
        timeout: Duration = .seconds(20), _ query: PostgresQuery, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        if try await pollUntil(timeout: timeout, every: .milliseconds(20), {
            // NULL is "not yet": an aggregate over no rows (the relay's gate row before its listener first wrote it).
            try await rows(query, as: Bool?.self).first == true
        }) { return }
        Issue.record("timed out waiting for \(query.sql)", sourceLocation: sourceLocation)
        throw TimedOut()
    }

    static let projectRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("project root not found")
    }()

    struct TimedOut: Error {}
}

func randomToken() -> String {
    randomHex(bytes: 32)
}

extension RecordedPush {
    var aps: [String: JSONValue] { payload.objectValue?["aps"]?.objectValue ?? [:] }
    var contentState: [String: JSONValue] { aps["content-state"]?.objectValue ?? [:] }
    var event: String? { if case .string(let event)? = aps["event"] { return event } else { return nil } }
    var timestamp: Int64? { if case .integer(let value)? = aps["timestamp"] { return value } else { return nil } }
    /// The integer at `content-state.n`, the counter most tests write.
    var n: Int64? { if case .integer(let value)? = contentState["n"] { return value } else { return nil } }
}
