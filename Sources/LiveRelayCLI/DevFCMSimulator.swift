import _CryptoExtras
import FCMSimulator
import Foundation
import LiveRelayDevSupport
import LiveRelayHTTPServer
import Logging

/// The FCM simulator `liverelay dev` runs when no service account is configured: its kept key, a fresh certificate,
/// and the relay settings that point at it once it listens.
struct DevFCMSimulator {
    let app: HTTPService
    /// The port, once the simulator listens.
    let ports: AsyncStream<Int>
    private let simulator: FCMSimulator
    private let key: _RSA.Signing.PrivateKey
    private let state: String

    init(state: String, logger: Logger) throws {
        self.state = state
        key = try FCMDevKeys.loadOrCreateKey(at: state + "/fcm-sim-key.pem")
        let certificate = try SimulatorCertificate.generate()
        try DevKeys.write(certificate.caPEM, to: state + "/fcm-sim-ca.pem")
        simulator = try FCMSimulator(
            credentials: FCMSimulator.credentials(key: key, projectID: DevDemo.fcmProjectID, tokenURI: ""),
            certificate: certificate, logger: logger)
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        self.ports = ports
        app = try simulator.application(host: "127.0.0.1", port: 0) { port in
            sink.yield(port)
            sink.finish()
        }
    }

    /// Writes the service account whose `token_uri` is the simulator on `port`, and returns the relay's FCM settings.
    func relayEnvironment(port: Int) throws -> [String: String] {
        let tokenURI = "https://127.0.0.1:\(port)/token"
        simulator.setTokenURI(tokenURI)
        let accountPath = state + "/fcm-service-account.json"
        try DevKeys.write(
            FCMSimulator.serviceAccountJSON(key: key, projectID: DevDemo.fcmProjectID, tokenURI: tokenURI),
            to: accountPath, permissions: 0o600)
        return [
            "FCM_SERVICE_ACCOUNT_FILE": accountPath, "FCM_PROJECT_ID": DevDemo.fcmProjectID,
            "FCM_URL": "https://127.0.0.1:\(port)", "FCM_CA_FILE": state + "/fcm-sim-ca.pem",
        ]
    }
}
