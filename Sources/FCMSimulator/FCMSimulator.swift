import _CryptoExtras
import Foundation
import HTTPTypes
import HummingbirdHTTP2
import Hummingbird
import LiveRelayCore
import LiveRelayDevSupport
import LiveRelayHTTPServer
import Logging
import NIOCore
import Synchronization

/// An FCM HTTP v1-compatible HTTP/2 + TLS server with its own OAuth token endpoint: verifies the service account's
/// RS256 assertions (`POST /token`) and the access tokens it issued, validates messages as FCM does
/// (`POST /v1/projects/<project>/messages:send`), answers Google's error JSON, injects faults, and records every
/// accepted message. Control routes: `GET/DELETE /sim/messages`, `GET/POST /sim/faults`, `GET /sim/stats`.
public final class FCMSimulator: Sendable {
    /// Who may send: the service account's public key, e-mail and token URI, and the project.
    public struct Credentials: Sendable {
        public var publicKeyPEM: String
        public var clientEmail: String
        public var tokenURI: String
        public var projectID: String
        public init(publicKeyPEM: String, clientEmail: String, tokenURI: String, projectID: String) {
            self.publicKeyPEM = publicKeyPEM
            self.clientEmail = clientEmail
            self.tokenURI = tokenURI
            self.projectID = projectID
        }
    }

    struct AccessToken {
        /// Epoch seconds, fractional (a token's last second counts).
        var issuedAt: Double
        var expiresAt: Double
    }

    struct State {
        var faults = FCMSimulatorFaults()
        var messages: [RecordedMessage] = []
        var sequence = 0
        var responses: [String: Int] = [:]
        var assertions: [OAuthAssertion] = []
        var accessTokens: [String: AccessToken] = [:]
        var tokenURI: String
    }

    let credentials: Credentials
    let publicKey: _RSA.Signing.PublicKey
    let certificate: SimulatorCertificate
    let state: Mutex<State>
    let logger: Logger
    let printMessages: Bool
    /// The most messages kept in memory (oldest dropped first).
    let capacity = 1_000_000

    public init(credentials: Credentials, certificate: SimulatorCertificate, faults: FCMSimulatorFaults = .init(),
                printMessages: Bool = true, logger: Logger) throws {
        self.credentials = credentials
        self.publicKey = try _RSA.Signing.PublicKey(pemRepresentation: credentials.publicKeyPEM)
        self.certificate = certificate
        self.printMessages = printMessages
        self.logger = logger
        var initial = State(tokenURI: credentials.tokenURI)
        initial.faults = faults
        self.state = Mutex(initial)
    }

    /// The token URI assertions must name as `aud` (set once the port is known).
    public func setTokenURI(_ uri: String) {
        state.withLock { $0.tokenURI = uri }
    }

    /// The HTTP/2 + TLS server; run it as a `Service` (or alone with `runService`).
    public func application(host: String, port: Int, onReady: (@Sendable (Int) async -> Void)? = nil)
        throws -> HTTPService {
        let router = Router(context: FCMSimulatorContext.self)
        router.post("token") { request, _ in await self.handleToken(request) }
        router.post("v1/projects/:project/:method") { request, context in
            await self.handleSend(request, context: context)
        }
        router.get("sim/messages") { request, _ in
            let since = request.uri.queryParameters.get("since", as: Int.self) ?? 0
            return try Self.json(.ok, MessageList(messages: self.messages(since: since)))
        }
        router.delete("sim/messages") { _, _ in
            self.state.withLock { $0.messages.removeAll() }
            return Response(status: .noContent)
        }
        router.get("sim/faults") { _, _ in try Self.json(.ok, self.state.withLock { $0.faults }) }
        router.post("sim/faults") { request, context in
            let faults = try await request.decode(as: FCMSimulatorFaults.self, context: context)
            let problems = faults.problems()
            // Refused whole, as a flag would be: the faults in force stay.
            guard problems.isEmpty else { throw HTTPError(.badRequest, message: problems.joined(separator: "; ")) }
            self.state.withLock { $0.faults = faults }
            return try Self.json(.ok, faults)
        }
        router.get("sim/stats") { _, _ in try Self.json(.ok, self.stats()) }
        return try HTTPService(
            router: router, server: .http2Upgrade(tlsConfiguration: certificate.serverTLSConfiguration()),
            address: .hostname(host, port: port), serverName: "fcm-sim", logger: logger
        ) { channel in await onReady?(channel.localAddress?.port ?? port) }
    }

    /// Accepted messages with a sequence above `since`.
    public func messages(since: Int = 0) -> [RecordedMessage] {
        state.withLock { state in
            guard let first = state.messages.first, since >= first.sequence else { return state.messages }
            return Array(state.messages[(since - first.sequence + 1)...])
        }
    }

    /// One line on standard output, unbuffered (a person watches `liverelay dev`'s output for it).
    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Replaces the faults.
    public func setFaults(_ faults: FCMSimulatorFaults) {
        state.withLock { $0.faults = faults }
    }

    /// What the simulator saw: responses by status, assertions verified, access tokens issued.
    public func stats() -> Stats {
        state.withLock { state in
            Stats(accepted: state.messages.count, responses: state.responses,
                  assertionsIssuedAt: state.assertions.map(\.issuedAt), accessTokensIssued: state.accessTokens.count)
        }
    }

    public struct Stats: Codable, Sendable {
        public var accepted: Int
        public var responses: [String: Int]
        public var assertionsIssuedAt: [Int64]
        public var accessTokensIssued: Int
    }

    /// The request context: Hummingbird's, plus the stream's channel (the reset fault closes its parent).
    public struct FCMSimulatorContext: RequestContext {
        public var coreContext: CoreRequestContextStorage
        let channel: any Channel
        public init(source: ApplicationRequestContextSource) {
            self.coreContext = .init(source: source)
            self.channel = source.channel
        }
    }

    struct MessageList: Codable { var messages: [RecordedMessage] }

    static func json<Value: Encodable>(_ status: HTTPResponse.Status, _ value: Value) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(status: status, headers: [.contentType: "application/json; charset=UTF-8"],
                        body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }

    /// Google's error JSON: `{"error": {"code", "message", "status", "details"}}`.
    static func googleError(_ code: Int, _ status: String, _ message: String, details: [JSONValue] = [],
                            retryAfter: Int? = nil) -> Response {
        var error: [String: JSONValue] = [
            "code": .integer(Int64(code)), "message": .string(message), "status": .string(status),
        ]
        if !details.isEmpty { error["details"] = .array(details) }
        var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
        if let retryAfter { headers[HTTPField.Name("retry-after")!] = String(retryAfter) }
        let body = JSONValue.object(["error": .object(error)]).compactBytes
        return Response(status: .init(code: code), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}
