import APNsSimulator
import ArgumentParser
import Crypto
import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayDevSupport

struct APNsSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-sim",
        abstract: "An APNs-compatible HTTP/2 + TLS server that records every accepted push.",
        discussion: """
            Production path: https://HOST:PORT/3/device/<token>; sandbox: https://HOST:PORT/sandbox/3/device/<token>.
            Broadcast channels: /1/apps/<bundle>/channels and /4/broadcasts/apps/<bundle>, under the same prefixes.
            Control: GET/DELETE /sim/pushes, GET /sim/channels, GET/DELETE /sim/broadcasts, GET/POST /sim/faults, \
            GET /sim/stats.
            """)

    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: "Port to listen on.") var port = 8443
    @Option(help: "Where to write the CA certificate the relay must trust (APNS_CA_FILE).")
    var caOut = ".liverelay/apns-sim-ca.pem"
    @Option(help: "The relay's .p8 key (its public half verifies provider tokens). Generated when absent.")
    var keyFile = ".liverelay/apns-key.p8"
    @Option(help: "Expected key ID (kid) of provider tokens.") var keyId: String?
    @Option(help: "Expected team ID (iss) of provider tokens.") var teamId: String?
    @Option(
        name: .customLong("fail-token"),
        help: "TOKEN=REASON: answer this token with an APNs reason (e.g. Unregistered).")
    var failTokens: [String] = []
    @Option(name: .customLong("sandbox-token"), help: "A token that exists only in the sandbox.")
    var sandboxTokens: [String] = []
    @Option(name: [.customLong("rate-503"), .customLong("rate503")], help: "Share of requests answered 503.")
    var rate503 = 0.0
    @Option(name: [.customLong("rate-429"), .customLong("rate429")], help: "Share of requests answered 429.")
    var rate429 = 0.0
    @Option(help: "retry-after seconds sent with 429/503.") var retryAfter: Int?
    @Option(help: "Share of requests that close their connection unanswered.") var resetRate = 0.0
    @Option(help: "Share of requests after which the server sends GOAWAY and retires the connection.")
    var goawayRate = 0.0
    @Option(name: .customLong("hostname"), help: "Extra DNS name for the certificate (e.g. the compose service name).")
    var hostnames: [String] = []
    @Option(help: "A file that keeps the channels created, so a restarted simulator knows them, as Apple would.")
    var channelsFile: String?
    @Flag(help: "Do not print a line per push.") var quiet = false

    /// The faults the flags ask for.
    var faults: SimulatorFaults {
        var faults = SimulatorFaults()
        faults.tokenErrors = tokenPairs(failTokens)
        faults.sandboxTokens = sandboxTokens
        faults.rate503 = rate503
        faults.rate429 = rate429
        faults.retryAfterSeconds = retryAfter
        faults.resetRate = resetRate
        faults.goAwayRate = goawayRate
        return faults
    }

    func validate() throws {
        let flags = ["rate503": "--rate-503", "rate429": "--rate-429", "retryAfterSeconds": "--retry-after",
                     "resetRate": "--reset-rate", "goAwayRate": "--goaway-rate"]
        try refuse(pairProblems(failTokens, option: "--fail-token") + faults.problems { flags[$0] ?? $0 }
            + [FaultRules.portProblem(port)].compactMap { $0 })
    }

    func run() async throws {
        let logger = bootstrapLogging()
        let key = try DevKeys.loadOrCreateKey(at: keyFile)
        let certificate = try SimulatorCertificate.generate(hosts: ["localhost"] + hostnames)
        try DevKeys.write(certificate.caPEM, to: caOut)
        let simulator = APNsSimulator(
            credentials: .init(publicKey: key.publicKey, keyID: keyId, teamID: teamId), certificate: certificate,
            faults: faults, printPushes: !quiet, channelsFile: channelsFile.map { URL(fileURLWithPath: $0) },
            logger: logger)
        let app = try simulator.application(host: host, port: port) { port in
            print("apns-sim listening on https://\(host):\(port) (sandbox: https://\(host):\(port)/sandbox)")
            print("  trust its CA with APNS_CA_FILE=\(caOut); sign with APNS_PRIVATE_KEY_FILE=\(keyFile)")
            fflush(nil)
        }
        try await app.runService(logger: logger)
    }
}

/// A simulator's flags that break its rules, refused together with the command's usage.
func refuse(_ problems: [String]) throws {
    guard !problems.isEmpty else { return }
    throw ValidationError(problems.joined(separator: "\n"))
}

/// `TOKEN=VALUE` options (the simulators' `--fail-token`) as a dictionary; an entry without `=` is left out (and
/// refused by `pairProblems`).
func tokenPairs(_ entries: [String]) -> [String: String] {
    var pairs: [String: String] = [:]
    for entry in entries {
        let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
        if parts.count == 2 { pairs[parts[0]] = parts[1] }
    }
    return pairs
}

/// The entries of a `TOKEN=VALUE` option that are not such a pair.
func pairProblems(_ entries: [String], option: String) -> [String] {
    entries.filter { $0.split(separator: "=", maxSplits: 1).count != 2 }
        .map { "\(option) takes TOKEN=VALUE, got \($0)" }
}

/// The development key pair and files of `liverelay dev` and `apns-sim`.
enum DevKeys {
    static func loadOrCreateKey(at path: String) throws -> P256.Signing.PrivateKey {
        if let pem = try? String(contentsOfFile: path, encoding: .utf8) {
            return try P256.Signing.PrivateKey(pemRepresentation: pem)
        }
        let key = P256.Signing.PrivateKey()
        try write(key.pemRepresentation, to: path, permissions: 0o600)
        return key
    }

    /// A random secret kept in a file readable by its owner only (the dev admin token): the same across restarts.
    static func loadOrCreateSecret(at path: String) throws -> String {
        let kept = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
        if let kept, kept.count >= 16 {
            return kept
        }
        let secret = randomHex(bytes: 24)
        try write(secret + "\n", to: path, permissions: 0o600)
        return secret
    }

    static func write(_ text: String, to path: String, permissions: Int = 0o644) throws {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: permissions], ofItemAtPath: path)
    }
}
