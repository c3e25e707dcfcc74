import ArgumentParser
import AsyncHTTPClient
import Foundation
import LiveRelayCore
import NIOCore
import NIOSSL

/// `liverelay health`: asks a running relay (or the simulator) whether it is ready; exit 0 only on a 200 answer.
/// It is what the container's HEALTHCHECK runs: the image has no shell tools to open a TCP connection.
struct HealthCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Check a running relay: exit 0 when GET /ready answers 200, else 1 with the reason.",
        discussion: """
            Without --url it asks http://127.0.0.1:$PORT/ready (PORT defaults to 8787; HOST is used unless it is a \
            wildcard address). For the simulator: --url https://localhost:8443/sim/stats --ca-file <its CA>.
            """)

    @Option(help: "The URL to GET (default: the relay's /ready from HOST and PORT).") var url: String?
    @Option(help: "Seconds to wait for the answer.") var timeout: Double = 3
    @Option(help: "Extra PEM trust roots for an https URL (a simulator's CA).") var caFile: String?

    /// Checked while the options are parsed, so that a mistake is shown with this command's usage.
    func validate() throws {
        if let url, !Self.isHTTP(url) {
            throw ValidationError("--url must be an http:// or https:// URL, got \(url)")
        }
        guard timeout > 0, timeout <= 60 else { throw ValidationError("--timeout must be in (0, 60] seconds") }
    }

    func run() async throws {
        let target = url ?? Self.defaultURL(environment: ProcessInfo.processInfo.environment)
        guard Self.isHTTP(target) else { fail("liverelay health: HOST and PORT make \(target), which is not a URL") }
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        if let caFile {
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.additionalTrustRoots = [.file(caFile)]
            configuration.tlsConfiguration = tls
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let status: UInt
        let body: ByteBuffer?
        do {
            let response = try await client.execute(
                HTTPClientRequest(url: target), timeout: .milliseconds(Int64(timeout * 1000)))
            status = response.status.code
            body = try? await response.body.collect(upTo: 64 * 1024)
        } catch {
            try? await client.shutdown()
            fail("liverelay health: \(target) did not answer: \(Self.reason(error))")
        }
        try? await client.shutdown()
        guard status == 200 else {
            fail("liverelay health: \(target) answered \(status)\(body.flatMap(Self.failingChecks) ?? "")")
        }
        print("liverelay health: \(target) answered 200")
    }

    static func isHTTP(_ text: String) -> Bool {
        guard let parsed = URL(string: text), parsed.host != nil else { return false }
        return ["http", "https"].contains(parsed.scheme ?? "")
    }

    /// "Connection refused" for a socket's error (AsyncHTTPClient's own description wraps it in NIO's call text).
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .connectTimeout {
            return "no answer in time"
        }
        return "\(error)"
    }

    /// ": not ready: database, listener" for `/ready`'s answer when some checks fail.
    static func failingChecks(_ body: ByteBuffer) -> String? {
        struct Ready: Decodable { var checks: [String: Bool] }
        guard let ready = try? JSONDecoder().decode(Ready.self, from: Data(body.readableBytesView)) else { return nil }
        let failing = ready.checks.filter { !$0.value }.keys.sorted()
        return failing.isEmpty ? nil : ": not ready: " + failing.joined(separator: ", ")
    }

    /// `http://HOST:PORT/ready`, with loopback in place of a wildcard listen address.
    static func defaultURL(environment: [String: String]) -> String {
        let port = environment["PORT"].flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
            ?? RelayConfiguration.defaultPort
        var host = environment["HOST"]?.trimmingCharacters(in: .whitespaces) ?? ""
        if ["", "0.0.0.0", "::", "[::]"].contains(host) { host = "127.0.0.1" }
        if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
        return "http://\(host):\(port)/ready"
    }
}
