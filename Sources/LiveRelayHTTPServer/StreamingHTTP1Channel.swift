import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1

/// HTTP/1.1 as Hummingbird's `HTTP1Channel` serves it, except for a connection whose first request is a `GET` of one
/// of `detachedPaths`: that request is answered off Hummingbird's per-connection task, and its response may detach
/// (`DetachableBodyWriter`), so that an open event stream costs a channel and a subscription, not a suspended task.
///
/// Hummingbird runs one task per connection for as long as the connection is open, and a task keeps the stack slabs
/// its deepest call needed (router, middleware, the route): about 14 KB of the 24 KB each of 10,000 open streams
/// cost. The connection's task therefore waits for its first request head (`FirstRequestHandler`) and ends if it is a
/// stream's; anything else is handed to Hummingbird's own HTTP/1 handling, unchanged.
struct StreamingHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    /// Who serves a connection, decided at its first request head.
    enum Decision: Sendable {
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// Answered by `answer` (or closed before a request came); nothing for the server's task to do.
        case detached
    }

    struct Value: ServerChildChannelValue {
        let channel: any Channel
        let decision: EventLoopFuture<Decision>
    }

    let responder: HTTPChannelHandler.Responder
    let configuration: HTTP1Channel.Configuration
    let detachedPaths: Set<String>
    /// Answers a request whose connection is detached.
    let answer: @Sendable (HTTPRequest, DetachedConnection) async -> Void

    /// Every connection's receive buffers: 512 bytes first, up to NIO's usual 64 KB for reads that fill them.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65_536)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        // The setup cannot wait for the head itself: NIO starts reading a connection only once its setup is done.
        let promise = channel.eventLoop.makePromise(of: Decision.self)
        do {
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = configuration.httpDecoder.maxHeaderFieldSize
            limits.maxHeaderListSize = configuration.httpDecoder.maxHeaderListSize
            limits.maxHeaderFieldCount = configuration.httpDecoder.maxHeaderFieldCount
            // A connection keeps its receive buffer for as long as it is open (NIO pools it for the next read):
            // NIO's default first buffer, 2 KB, was a quarter of an open stream's memory. A stream's request head
            // is a few hundred bytes; a larger request takes more reads, and the buffer grows as reads fill it.
            try channel.syncOptions?.setOption(.recvAllocator, value: Self.receiveBuffers)
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandler(FirstRequestHandler(
                promise: promise, setup: self, idleTimeout: configuration.idleTimeout ?? .seconds(60), logger: logger))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededFuture(Value(channel: channel, decision: promise.futureResult))
    }

    /// Hands a connection to Hummingbird: what its `HTTP1Channel.setup` adds after the codec.
    func handToHummingbird(_ channel: any Channel, logger: Logger) throws -> Decision {
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(ConnectionTagHandler())
        // A request must arrive whole within the idle timeout (a stream's GET is answered before this is added, and
        // its head was bounded by `FirstRequestHandler`'s timer).
        try pipeline.addHandler(RequestDeadlineHandler(deadline: configuration.idleTimeout ?? .seconds(60)))
        try pipeline.addHandlers(configuration.additionalChannelHandlers())
        try pipeline.addHandler(HTTPConnectionStateHandler(
            idleTimeout: configuration.idleTimeout.map { .nanoseconds($0.nanoseconds) }, logger: logger))
        return .http(try NIOAsyncChannel(
            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)))
    }

    func isDetached(_ head: HTTPRequest) -> Bool {
        guard head.method == .get, let path = head.path else { return false }
        return detachedPaths.contains(String(path.prefix { $0 != "?" }))
    }

    func handle(value: Value, logger: Logger) async {
        switch try? await value.decision.get() {
        case .http(let asyncChannel): await handleHTTP(asyncChannel: asyncChannel, logger: logger)
        case .detached, nil: break
        }
    }
}
