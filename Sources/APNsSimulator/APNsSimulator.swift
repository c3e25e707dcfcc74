import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdHTTP2
import LiveRelayCore
import LiveRelayDevSupport
import LiveRelayHTTPServer
import Logging
import NIOCore
import Synchronization

/// An APNs-compatible HTTP/2 + TLS server: Apple's provider API (`POST /3/device/<token>`) with ES256 token checks,
/// Apple's header and payload rules and reasons, fault injection, and a record of every accepted push.
///
/// `POST /3/device/<token>` is production; `POST /sandbox/3/device/<token>` is the sandbox (point `APNS_SANDBOX_URL`
/// at `https://host:port/sandbox`). Broadcast channels: see APNsSimulator+Channels.swift. Control routes:
/// `GET/DELETE /sim/pushes`, `GET /sim/channels`, `GET/DELETE /sim/broadcasts`, `GET/POST /sim/faults`,
/// `GET /sim/stats`.
public final class APNsSimulator: Sendable {
    /// Who may send: the public half of the relay's `.p8` key, and optionally the expected key and team IDs.
    public struct Credentials: Sendable {
        /// The public key, X9.63 bytes.
        let publicKeyBytes: Data
        public var keyID: String?
        public var teamID: String?
        public var publicKey: P256.Signing.PublicKey { try! P256.Signing.PublicKey(x963Representation: publicKeyBytes) }
        public init(publicKey: P256.Signing.PublicKey, keyID: String? = nil, teamID: String? = nil) {
            self.publicKeyBytes = publicKey.x963Representation
            self.keyID = keyID
            self.teamID = teamID
        }
    }

    struct State {
        var faults = SimulatorFaults()
        var pushes: [RecordedPush] = []
        var sequence = 0
        var responses: [String: Int] = [:]
        /// Provider tokens whose signature verified, by token text: APNs checks a token once and then trusts it
        /// (an ES256 verification per request would make the simulator, not the relay, the bottleneck of a test).
        var providerTokens: [String: ProviderToken] = [:]
        /// Broadcast channels by environment, bundle and id, in creation order; accepted broadcasts.
        var channels: [String: SimulatedChannel] = [:]
        var channelOrder: [String] = []
        var broadcasts: [RecordedBroadcast] = []
    }

    let credentials: Credentials
    let certificate: SimulatorCertificate
    let state = Mutex(State())
    let logger: Logger
    let printPushes: Bool
    /// Where the channels are kept across restarts (`APNsSimulator+ChannelFile.swift`); nil keeps them in memory.
    let channelsFile: URL?
    /// The most pushes kept in memory (oldest dropped first).
    let capacity = 1_000_000

    public init(credentials: Credentials, certificate: SimulatorCertificate, faults: SimulatorFaults = .init(),
                printPushes: Bool = true, channelsFile: URL? = nil, logger: Logger) {
        self.credentials = credentials
        self.certificate = certificate
        self.printPushes = printPushes
        self.channelsFile = channelsFile
        self.logger = logger
        state.withLock { $0.faults = faults }
        loadChannels()
    }

    /// The HTTP/2 + TLS server; run it as a `Service` (or alone with `runService`).
    public func application(host: String, port: Int, onReady: (@Sendable (Int) async -> Void)? = nil)
        throws -> HTTPService {
        let router = Router(context: SimulatorContext.self)
        router.add(middleware: BadPathMiddleware(simulator: self))
        router.post("3/device/:token") { request, context in
            await self.handlePush(request, context: context, environment: "production")
        }
        router.post(":environment/3/device/:token") { request, context in
            await self.handlePush(
                request, context: context, environment: context.parameters.get("environment") ?? "production")
        }
        addChannelRoutes(to: router)
        router.get("sim/pushes") { request, _ in
            let since = request.uri.queryParameters.get("since", as: Int.self) ?? 0
            let pushes = self.pushes(since: since)
            return try Self.json(.ok, PushList(pushes: pushes))
        }
        router.delete("sim/pushes") { _, _ in
            self.state.withLock { $0.pushes.removeAll() }
            return Response(status: .noContent)
        }
        router.get("sim/faults") { _, _ in try Self.json(.ok, self.state.withLock { $0.faults }) }
        router.post("sim/faults") { request, context in
            let faults = try await request.decode(as: SimulatorFaults.self, context: context)
            let problems = faults.problems()
            // Refused whole, as a flag would be: the faults in force stay.
            guard problems.isEmpty else { throw HTTPError(.badRequest, message: problems.joined(separator: "; ")) }
            self.state.withLock { $0.faults = faults }
            return try Self.json(.ok, faults)
        }
        router.get("sim/stats") { _, _ in
            let stats = self.state.withLock { state in
                Stats(accepted: state.pushes.count, responses: state.responses,
                      providerTokensIssuedAt: state.providerTokens.values.map(\.issuedAt).sorted())
            }
            return try Self.json(.ok, stats)
        }
        return try HTTPService(
            router: router, server: .http2Upgrade(tlsConfiguration: certificate.serverTLSConfiguration()),
            address: .hostname(host, port: port), serverName: "apns-sim", logger: logger
        ) { channel in await onReady?(channel.localAddress?.port ?? port) }
    }

    /// Accepted pushes with a sequence above `since`. Pushes and broadcasts share the sequence, so a push's place in
    /// the list is searched for (the list is in sequence order), never computed from its number.
    public func pushes(since: Int = 0) -> [RecordedPush] {
        state.withLock { state in
            var low = 0, high = state.pushes.count
            while low < high {
                let middle = (low + high) / 2
                if state.pushes[middle].sequence <= since { low = middle + 1 } else { high = middle }
            }
            return Array(state.pushes[low...])
        }
    }

    /// Replaces the faults.
    public func setFaults(_ faults: SimulatorFaults) {
        state.withLock { $0.faults = faults }
    }

    /// Responses given so far, by status code.
    public func responseCounts() -> [String: Int] { state.withLock { $0.responses } }

    /// Issue times of the distinct provider tokens seen.
    public func providerTokenIssueTimes() -> [Int64] {
        state.withLock { $0.providerTokens.values.map(\.issuedAt).sorted() }
    }

    /// The request context: Hummingbird's, plus the stream's channel (its parent is the connection, which the
    /// reset and GOAWAY faults act on).
    public struct SimulatorContext: RequestContext {
        public var coreContext: CoreRequestContextStorage
        let channel: any Channel
        public init(source: ApplicationRequestContextSource) {
            self.coreContext = .init(source: source)
            self.channel = source.channel
        }
    }

    struct PushList: Codable { var pushes: [RecordedPush] }
    struct Stats: Codable {
        var accepted: Int
        var responses: [String: Int]
        var providerTokensIssuedAt: [Int64]
    }

    static func json<Value: Encodable>(_ status: HTTPResponse.Status, _ value: Value) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Response(status: status, headers: [.contentType: "application/json"],
                        body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }
}
