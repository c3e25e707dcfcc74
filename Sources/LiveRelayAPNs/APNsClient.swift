import Foundation
import LiveRelayCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// Sends pushes to APNs over long-lived HTTP/2 connections (TLS with ALPN `h2`): one connection per APNs host,
/// made on first use and replaced after GOAWAY or a close. A batch of pushes goes out in one flush and waits for its
/// answers while APNs keeps answering (see `HTTP2Batch`).
public final class APNsClient: Sendable {
    private let pool: ConnectionPool
    public let tokens: ProviderTokenSource

    /// - Parameter eventLoop: the loop the connections live on; by default one of the shared loops.
    public init(configuration: APNsConfiguration, tokens: ProviderTokenSource,
                eventLoop: (any EventLoop)? = nil) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let caFile = configuration.caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        let origins = try Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map {
            ($0, try Origin(url: configuration.baseURL(for: $0)))
        })
        self.pool = ConnectionPool(
            eventLoop: eventLoop ?? MultiThreadedEventLoopGroup.singleton.next(), sslContext: try NIOSSLContext(configuration: tls),
            origins: origins,
            limits: .init(
                silenceSeconds: configuration.requestTimeoutSeconds, batchSeconds: configuration.batchLimitSeconds))
        self.tokens = tokens
    }

    /// Sends pushes with one provider token and returns APNs' answers in the same order. A push APNs did not
    /// process (GOAWAY, `REFUSED_STREAM`) is sent once more on a new connection before it counts as failed.
    public func send(_ pushes: [PushRequest], providerToken: String) async -> [Result<APNsResponse, HTTP2ClientError>] {
        guard !pushes.isEmpty else { return [] }
        var results = await pool.send(pushes, providerToken: providerToken)
        let again = results.indices.filter {
            if case .failure(let error) = results[$0] { return error.wasNotProcessed }
            return false
        }
        if !again.isEmpty {
            let retried = await pool.send(again.map { pushes[$0] }, providerToken: providerToken)
            for (index, result) in zip(again, retried) { results[index] = result }
        }
        return results
    }

    /// Closes the connections.
    public func shutdown() async throws {
        try await pool.shutdown()
    }
}

/// Where one environment's requests go.
struct Origin: Sendable, Hashable {
    var host: String
    var port: Int
    /// Path before `/3/device/` (the simulator serves its sandbox under `/sandbox`).
    var pathPrefix: String
    var authority: String

    init(url text: String) throws {
        guard let url = URL(string: text), url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw HTTP2ClientError.connectFailed("\(text) is not an https:// URL")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = url.port ?? 443
        self.pathPrefix = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        self.authority = url.port.map { "\(host):\($0)" } ?? host
    }

    /// True for a literal IPv4 or IPv6 address (no SNI; the certificate must name the address).
    var isIPAddress: Bool {
        host.contains(":") || host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    }
}

/// The connections of one client and its in-flight batches. All state lives on `eventLoop`.
final class ConnectionPool: @unchecked Sendable {
    private enum Slot {
        case connecting(EventLoopFuture<NIOLoopBound<HTTP2Connection>>)
        case ready(HTTP2Connection)
    }

    let eventLoop: any EventLoop
    private let sslContext: NIOSSLContext
    private let origins: [APNsEnvironment: Origin]
    private let limits: HTTP2Batch.Limits
    /// Touched only on `eventLoop`.
    private var slots: [Origin: Slot] = [:]

    init(eventLoop: any EventLoop, sslContext: NIOSSLContext, origins: [APNsEnvironment: Origin],
         limits: HTTP2Batch.Limits) {
        self.eventLoop = eventLoop
        self.sslContext = sslContext
        self.origins = origins
        self.limits = limits
    }

    func send(_ pushes: [PushRequest], providerToken: String) async -> [Result<APNsResponse, HTTP2ClientError>] {
        let promise = eventLoop.makePromise(of: [Result<APNsResponse, HTTP2ClientError>].self)
        eventLoop.execute {
            self.start(pushes, providerToken: providerToken, promise: promise)
        }
        // The promise only ever succeeds: every push gets an answer or an error.
        return (try? await promise.futureResult.get()) ?? pushes.map { _ in .failure(.connectionClosed) }
    }

    func shutdown() async throws {
        try await eventLoop.submit {
            for slot in self.slots.values {
                if case .ready(let connection) = slot { connection.close() }
            }
            self.slots = [:]
        }.get()
    }

    private func start(_ pushes: [PushRequest], providerToken: String,
                       promise: EventLoopPromise<[Result<APNsResponse, HTTP2ClientError>]>) {
        eventLoop.preconditionInEventLoop()
        let batch = HTTP2Batch(count: pushes.count, limits: limits, eventLoop: eventLoop, promise: promise)
        batch.startTimer()
        var byEnvironment: [APNsEnvironment: [Int]] = [:]
        for (index, push) in pushes.enumerated() { byEnvironment[push.environment, default: []].append(index) }
        for (environment, indices) in byEnvironment {
            guard let origin = origins[environment] else { continue }
            let authorization = "bearer \(providerToken)"
            connection(to: origin).assumeIsolated().whenComplete { result in
                switch result {
                case .failure(let error):
                    for index in indices { batch.complete(index, .failure(.connectFailed("\(error)"))) }
                case .success(let bound):
                    let connection = bound.value
                    for index in indices where batch.isWaiting(index) {
                        let push = pushes[index]
                        let streamID = connection.write(
                            headers: Self.headers(for: push, origin: origin, authorization: authorization),
                            body: ByteBuffer(bytes: push.payload)
                        ) { batch.complete(index, $0) }
                        if let streamID { batch.track(index, on: connection, streamID: streamID) }
                    }
                    connection.flush()
                }
            }
        }
    }

    static func headers(for push: PushRequest, origin: Origin, authorization: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(11)
        headers.add(name: ":method", value: "POST")
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: origin.authority)
        // Values that differ on every request stay out of HPACK's dynamic table, so they do not evict the ones that
        // repeat (the provider token above all), which then go as one-byte indexes instead of being encoded again.
        headers.add(name: ":path", value: "\(origin.pathPrefix)/3/device/\(push.deviceToken)", indexing: .nonIndexable)
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "apns-push-type", value: push.pushType.rawValue)
        headers.add(name: "apns-topic", value: push.topic)
        headers.add(name: "apns-priority", value: String(push.priority))
        headers.add(name: "apns-id", value: push.apnsID.uuidString.lowercased(), indexing: .nonIndexable)
        if let expiration = push.expiration {
            headers.add(name: "apns-expiration", value: String(expiration), indexing: .nonIndexable)
        }
        headers.add(name: "content-type", value: "application/json")
        return headers
    }

    /// The live connection to an origin, or a new one.
    private func connection(to origin: Origin) -> EventLoopFuture<NIOLoopBound<HTTP2Connection>> {
        switch slots[origin] {
        case .ready(let connection) where connection.isUsable:
            return eventLoop.makeSucceededFuture(NIOLoopBound(connection, eventLoop: eventLoop))
        case .connecting(let future):
            return future
        default:
            let future = connect(to: origin)
            slots[origin] = .connecting(future)
            future.assumeIsolated().whenComplete { result in
                guard case .connecting(let current)? = self.slots[origin], current === future else { return }
                switch result {
                case .success(let connection): self.slots[origin] = .ready(connection.value)
                case .failure: self.slots[origin] = nil
                }
            }
            return future
        }
    }

    private func connect(to origin: Origin) -> EventLoopFuture<NIOLoopBound<HTTP2Connection>> {
        let sslContext = self.sslContext
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(context: sslContext, serverHostname: origin.isIPAddress ? nil : origin.host)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(
                        // The relay builds every header block it sends and talks only to APNs (or the endpoint the
                        // operator configured): checking each block again cost ~3% of the CPU per push.
                        mode: .client, headerBlockValidation: .disabled, contentLengthValidation: .disabled))
                    try channel.pipeline.syncOperations.addHandler(HTTP2Connection(eventLoop: channel.eventLoop))
                }
            }
            .connect(host: origin.host, port: origin.port)
            .flatMap { channel in
                do {
                    let connection = NIOLoopBound(
                        try channel.pipeline.syncOperations.handler(type: HTTP2Connection.self), eventLoop: channel.eventLoop)
                    return connection.value.ready.futureResult.map { connection }
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
    }
}
