import _CryptoExtras
import ArgumentParser
import FCMSimulator
import Foundation
import LiveRelayDevSupport

struct FCMSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm-sim",
        abstract: "An FCM HTTP v1-compatible HTTP/2 + TLS server with its own OAuth token endpoint.",
        discussion: """
            Writes its CA (FCM_CA_FILE) and a service-account JSON whose token_uri points at itself \
            (FCM_SERVICE_ACCOUNT_FILE).
            Send: POST https://HOST:PORT/v1/projects/<project>/messages:send.
            Control: GET/DELETE /sim/messages, GET/POST /sim/faults, GET /sim/stats.
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8444
    @Option(help: "Where to write the CA certificate the relay must trust (FCM_CA_FILE).")
    var caOut = ".liverelay/fcm-sim-ca.pem"
    @Option(help: "Where to write the service-account JSON (FCM_SERVICE_ACCOUNT_FILE).")
    var serviceAccountOut = ".liverelay/fcm-service-account.json"
    @Option(help: "The service account's RSA key (PEM). Generated when absent.")
    var keyFile = ".liverelay/fcm-sim-key.pem"
    @Option(help: "The Firebase project ID (FCM_PROJECT_ID).") var projectId = "liverelay-dev"
    @Option(help: "The token endpoint written into the service account, as the relay reaches it (default: ours).")
    var tokenUri: String?
    @Option(name: .customLong("fail-token"), help: "TOKEN=CODE: answer this token with an FCM error code.")
    var failTokens: [String] = []
    @Option(name: [.customLong("rate-503"), .customLong("rate503")], help: "Share of requests answered 503.")
    var rate503 = 0.0
    @Option(name: [.customLong("rate-429"), .customLong("rate429")], help: "Share of requests answered 429.")
    var rate429 = 0.0
    @Option(help: "Retry-After seconds sent with 429/503.") var retryAfter: Int?
    @Option(help: "Share of requests that close their connection unanswered.") var resetRate = 0.0
    @Option(help: "expires_in of the access tokens issued, seconds.") var accessTokenLifetime = 3600
    @Option(name: .customLong("hostname"), help: "Extra DNS name for the certificate (e.g. the compose service name).")
    var hostnames: [String] = []
    @Flag(help: "Do not print a line per message.") var quiet = false

    /// The faults the flags ask for.
    var faults: FCMSimulatorFaults {
        var faults = FCMSimulatorFaults()
        faults.tokenErrors = tokenPairs(failTokens)
        faults.rate503 = rate503
        faults.rate429 = rate429
        faults.retryAfterSeconds = retryAfter
        faults.resetRate = resetRate
        faults.accessTokenLifetimeSeconds = accessTokenLifetime
        return faults
    }

    func validate() throws {
        let flags = ["rate503": "--rate-503", "rate429": "--rate-429", "retryAfterSeconds": "--retry-after",
                     "resetRate": "--reset-rate", "accessTokenLifetimeSeconds": "--access-token-lifetime"]
        try refuse(pairProblems(failTokens, option: "--fail-token") + faults.problems { flags[$0] ?? $0 }
            + [FaultRules.portProblem(port)].compactMap { $0 })
    }

    func run() async throws {
        let logger = bootstrapLogging()
        let key = try FCMDevKeys.loadOrCreateKey(at: keyFile)
        let certificate = try SimulatorCertificate.generate(hosts: ["localhost"] + hostnames)
        try DevKeys.write(certificate.caPEM, to: caOut)
        let (host, projectID, accountOut, caOut, givenURI) = (host, projectId, serviceAccountOut, caOut, tokenUri)
        let simulator = try FCMSimulator(
            credentials: FCMSimulator.credentials(key: key, projectID: projectID, tokenURI: ""),
            certificate: certificate, faults: faults, printMessages: !quiet, logger: logger)
        let app = try simulator.application(host: host, port: port) { port in
            let tokenURI = givenURI ?? "https://\(host == "0.0.0.0" ? "localhost" : host):\(port)/token"
            simulator.setTokenURI(tokenURI)
            do {
                let account = FCMSimulator.serviceAccountJSON(key: key, projectID: projectID, tokenURI: tokenURI)
                try DevKeys.write(account, to: accountOut, permissions: 0o600)
            } catch {
                fail("fcm-sim: cannot write \(accountOut): \(error)")
            }
            print("fcm-sim listening on https://\(host):\(port) (project \(projectID))")
            print("  FCM_URL=https://\(host):\(port) FCM_CA_FILE=\(caOut) FCM_SERVICE_ACCOUNT_FILE=\(accountOut)")
            fflush(nil)
        }
        try await app.runService(logger: logger)
    }
}

/// The FCM simulator's service-account key of `liverelay dev` and `fcm-sim`, kept so restarts keep one account.
enum FCMDevKeys {
    static func loadOrCreateKey(at path: String) throws -> _RSA.Signing.PrivateKey {
        if let pem = try? String(contentsOfFile: path, encoding: .utf8) {
            return try _RSA.Signing.PrivateKey(pemRepresentation: pem)
        }
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        try DevKeys.write(key.pkcs8PEMRepresentation, to: path, permissions: 0o600)
        return key
    }
}
