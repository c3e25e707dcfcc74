import _CryptoExtras
import FCMSimulator
import Foundation
import LiveRelayCore
import LiveRelayDevSupport
import Logging
import Testing

/// An FCM simulator over HTTP/2 + TLS with its token endpoint, and the files a relay needs to use it.
struct FCMFixture: Sendable {
    static let projectID = "liverelay-tests"
    /// One RSA key for every test (making a 2048-bit key takes a while).
    static let key: _RSA.Signing.PrivateKey = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    let simulator: FCMSimulator
    let port: Int
    let accountFile: String
    let caFile: String

    /// The relay's FCM settings, as a user would set them.
    var environment: [String: String] {
        [
            "FCM_PROJECT_ID": Self.projectID,
            "FCM_SERVICE_ACCOUNT_FILE": accountFile,
            "FCM_URL": "https://127.0.0.1:\(port)",
            "FCM_CA_FILE": caFile,
        ]
    }

    /// Starts a simulator, runs `body`, then stops it.
    static func with(faults: FCMSimulatorFaults = .init(), logger: Logger,
                     _ body: @Sendable (FCMFixture) async throws -> Void) async throws {
        let certificate = try SimulatorCertificate.generate()
        let base = NSTemporaryDirectory() + "liverelay-fcm-\(UUID().uuidString)"
        let caFile = base + "-ca.pem", accountFile = base + "-account.json"
        try Data(certificate.caPEM.utf8).write(to: URL(fileURLWithPath: caFile))
        defer {
            try? FileManager.default.removeItem(atPath: caFile)
            try? FileManager.default.removeItem(atPath: accountFile)
        }
        let simulator = try FCMSimulator(
            credentials: FCMSimulator.credentials(key: key, projectID: projectID, tokenURI: ""),
            certificate: certificate, faults: faults, printMessages: false, logger: logger)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let app = try simulator.application(host: "127.0.0.1", port: 0) { port in
            portSink.yield(port)
            portSink.finish()
        }
        try await withGracefulService(app, logger: logger) {
            var port = 0
            for await value in ports { port = value }
            let tokenURI = "https://localhost:\(port)/token"
            simulator.setTokenURI(tokenURI)
            let account = FCMSimulator.serviceAccountJSON(key: key, projectID: projectID, tokenURI: tokenURI)
            try Data(account.utf8).write(to: URL(fileURLWithPath: accountFile))
            let fixture = FCMFixture(simulator: simulator, port: port, accountFile: accountFile, caFile: caFile)
            try await body(fixture)
        }
    }

    /// Waits until the simulator has recorded messages satisfying `condition`, or fails after `timeout`.
    @discardableResult
    func waitForMessages(timeout: Duration = .seconds(20), sourceLocation: SourceLocation = #_sourceLocation,
                         _ condition: ([RecordedMessage]) -> Bool) async throws -> [RecordedMessage] {
        if try await pollUntil(timeout: timeout, { condition(simulator.messages()) }) { return simulator.messages() }
        let messages = simulator.messages()
        let responses = simulator.stats().responses
        Issue.record("timed out waiting for FCM messages; \(messages.count) recorded, responses \(responses)",
                     sourceLocation: sourceLocation)
        throw Harness.TimedOut()
    }
}

extension Harness {
    /// The harness's APNs simulator plus an FCM simulator, with a relay environment that configures both.
    func withFCM(faults: FCMSimulatorFaults = .init(),
                 _ body: @Sendable (FCMFixture) async throws -> Void) async throws {
        try await FCMFixture.with(faults: faults, logger: logger, body)
    }

    /// Registers an Android activity directly in SQL, as a writer would; returns its id.
    @discardableResult
    func registerAndroidActivity(session: String, token: String, device: UUID? = nil,
                                 state: String = #"{"status": "working"}"#) async throws -> UUID {
        let id = UUID()
        try await sql("""
            INSERT INTO activity_registration (id, secret_hash, session_id, activity_token, bundle_id, platform,
                                               device_uuid, content_state)
            VALUES (\(id), \(secretHash("test-secret")), \(session), \(token), 'dev.liverelay.android', 'android',
                    \(device), \(state)::jsonb)
            """)
        return id
    }
}

/// An FCM registration token's shape, unique per call.
func randomFCMToken() -> String {
    "f" + randomHex(bytes: 10) + ":APA91b" + randomHex(bytes: 60)
}

extension Harness {
    /// A harness, an FCM simulator and an in-process relay configured for both services (`environment` on top).
    static func withFCMRelay(faults: FCMSimulatorFaults = .init(), environment: [String: String] = [:],
                             _ body: @Sendable (Harness, FCMFixture, Int) async throws -> Void) async throws {
        try await Harness.with { h in
            try await h.withFCM(faults: faults) { fcm in
                try await h.withRelayPort(environment: fcm.environment.merging(environment) { $1 }) { port in
                    try await body(h, fcm, port)
                }
            }
        }
    }
}
