import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// HTTP/2 over TLS (ALPN `h2`) to any number of origins over long-lived connections: one connection per origin,
/// made on first use and replaced after GOAWAY or a close. A batch of requests goes out in one flush per connection
/// and waits for its answers while the server keeps answering (see `HTTP2Batch`). All state lives on `eventLoop`.
public final class HTTP2Client: @unchecked Sendable {
    /// When a batch gives up on the requests still open.
    public struct Limits: Sendable {
        /// How long the server may answer none of the batch's requests.
        public var silenceSeconds: Double
        /// The longest a batch waits however steadily the server answers.
        public var batchSeconds: Double
        /// How long a connection may read nothing, no request open, before it checks with a PING that the server
        /// is still there (see `HTTP2Liveness`).
        public var idlePingSeconds: Double
        public init(silenceSeconds: Double, batchSeconds: Double, idlePingSeconds: Double = 60) {
            self.silenceSeconds = silenceSeconds
            self.batchSeconds = batchSeconds
            self.idlePingSeconds = idlePingSeconds
        }
    }

    private enum Slot {
        case connecting(EventLoopFuture<NIOLoopBound<HTTP2Connection>>)
        case ready(HTTP2Connection)
    }

    let eventLoop: any EventLoop
    private let sslContext: NIOSSLContext
    private let limits: Limits
    /// Touched only on `eventLoop`.
    private var slots: [HTTP2Origin: Slot] = [:]
    /// Set by `shutdown()`; touched only on `eventLoop`. No connection is made after it.
    private var isShutDown = false

    /// - Parameters:
    ///   - caFile: extra PEM trust roots (for a simulator), besides the system's.
    ///   - eventLoop: the loop the connections live on; by default one of the shared loops.
    public init(caFile: String?, limits: Limits, eventLoop: (any EventLoop)? = nil) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        self.sslContext = try NIOSSLContext(configuration: tls)
        self.eventLoop = eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.limits = limits
    }

    /// Sends requests and returns the answers in the same order. A request the server did not process (GOAWAY,
    /// `REFUSED_STREAM`) is sent once more on a new connection before it counts as failed.
    public func send(_ requests: [HTTP2Request]) async -> [Result<HTTP2Response, HTTP2ClientError>] {
        guard !requests.isEmpty else { return [] }
        var results = await sendOnce(requests)
        let again = results.indices.filter {
            if case .failure(let error) = results[$0] { return error.wasNotProcessed }
            return false
        }
        if !again.isEmpty {
            let retried = await sendOnce(again.map { requests[$0] })
            for (index, result) in zip(again, retried) { results[index] = result }
        }
        return results
    }

    private func sendOnce(_ requests: [HTTP2Request]) async -> [Result<HTTP2Response, HTTP2ClientError>] {
        let promise = eventLoop.makePromise(of: [Result<HTTP2Response, HTTP2ClientError>].self)
        if eventLoop.inEventLoop {
            // A delivery worker runs on its client's loop: the requests are written before its task suspends, not
            // after whatever else the loop has queued (another transport's half of the batch, say).
            start(requests, promise: promise)
        } else {
            eventLoop.execute {
                self.start(requests, promise: promise)
            }
        }
        // The promise only ever succeeds: every request gets an answer or an error.
        return (try? await promise.futureResult.get()) ?? requests.map { _ in .failure(.connectionClosed) }
    }

    /// Closes the connections, those still being made included, and makes no new one: a request sent afterwards
    /// fails at once. A connection left to finish its handshake after the relay stopped would still send the requests
    /// queued on it, and keep the server waiting for it to close.
    public func shutdown() async throws {
        try await eventLoop.submit {
            self.isShutDown = true
            for slot in self.slots.values {
                // A connection still being made closes as soon as it is made (see `connection(to:)`).
                if case .ready(let connection) = slot { connection.close() }
            }
            self.slots = [:]
        }.get()
    }

    private func start(_ requests: [HTTP2Request],
                       promise: EventLoopPromise<[Result<HTTP2Response, HTTP2ClientError>]>) {
        eventLoop.preconditionInEventLoop()
        let batch = HTTP2Batch(count: requests.count, limits: limits, eventLoop: eventLoop, promise: promise)
        batch.startTimer()
        var byOrigin: [HTTP2Origin: [Int]] = [:]
        for (index, request) in requests.enumerated() { byOrigin[request.origin, default: []].append(index) }
        for (origin, indices) in byOrigin {
            connection(to: origin).assumeIsolated().whenComplete { result in
                switch result {
                case .failure(let error):
                    for index in indices { batch.complete(index, .failure(.connectFailed("\(error)"))) }
                case .success(let bound):
                    let connection = bound.value
                    connection.whenSecured { batch.connectionSecured() }
                    for index in indices where batch.isWaiting(index) {
                        let request = requests[index]
                        let streamID = connection.write(headers: request.headers, body: request.body) {
                            batch.complete(index, $0)
                        }
                        if let streamID { batch.track(index, on: connection, streamID: streamID) }
                    }
                    connection.flush()
                }
            }
        }
    }

    /// The live connection to an origin, or a new one.
    private func connection(to origin: HTTP2Origin) -> EventLoopFuture<NIOLoopBound<HTTP2Connection>> {
        if isShutDown { return eventLoop.makeFailedFuture(HTTP2ClientError.connectFailed("the client was shut down")) }
        switch slots[origin] {
        case .ready(let connection) where connection.isUsable:
            return eventLoop.makeSucceededFuture(NIOLoopBound(connection, eventLoop: eventLoop))
        case .connecting(let future):
            return future
        default:
            let future = connect(to: origin)
            slots[origin] = .connecting(future)
            // Registered first, so it runs before any batch writes on the new connection.
            future.assumeIsolated().whenComplete { result in
                if self.isShutDown, case .success(let connection) = result { connection.value.close() }
                guard case .connecting(let current)? = self.slots[origin], current === future else { return }
                switch result {
                case .success(let connection): self.slots[origin] = .ready(connection.value)
                case .failure: self.slots[origin] = nil
                }
            }
            return future
        }
    }

    private func connect(to origin: HTTP2Origin) -> EventLoopFuture<NIOLoopBound<HTTP2Connection>> {
        let sslContext = self.sslContext
        let idlePing = TimeAmount.nanoseconds(Int64(limits.idlePingSeconds * 1e9))
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let tls = try NIOSSLClientHandler(
                        context: sslContext, serverHostname: origin.isIPAddress ? nil : origin.host)
                    try channel.pipeline.syncOperations.addHandler(tls)
                    try channel.pipeline.syncOperations.addHandler(NIOHTTP2Handler(
                        // The relay builds every header block it sends and talks only to the push services (or the
                        // endpoints the operator configured): checking each block again cost ~3% of the CPU per push.
                        mode: .client, headerBlockValidation: .disabled, contentLengthValidation: .disabled))
                    try channel.pipeline.syncOperations.addHandler(HTTP2Connection(
                        eventLoop: channel.eventLoop, idlePing: idlePing))
                }
            }
            .connect(host: origin.host, port: origin.port)
            .flatMap { channel in
                do {
                    let connection = NIOLoopBound(
                        try channel.pipeline.syncOperations.handler(type: HTTP2Connection.self),
                        eventLoop: channel.eventLoop)
                    return connection.value.ready.futureResult.map { connection }
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
    }
}
