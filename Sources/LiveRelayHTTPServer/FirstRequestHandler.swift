import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Waits for a connection's first request head and decides who serves the connection: `StreamingHTTP1Channel`'s
/// detached answer (the head is a stream's) or Hummingbird (anything else: this handler then leaves the pipeline and
/// the head goes on to Hummingbird's handlers).
final class FirstRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    enum State {
        case waiting(EventLoopPromise<StreamingHTTP1Channel.Decision>)
        /// The connection's one request is answered without Hummingbird; what the client sends next is ignored.
        case detached(DetachedConnection)
        case handedOver
    }

    private var state: State
    private let setup: StreamingHTTP1Channel
    private let idleTimeout: TimeAmount
    private let logger: Logger
    private var idleTimer: Scheduled<Void>?

    init(promise: EventLoopPromise<StreamingHTTP1Channel.Decision>, setup: StreamingHTTP1Channel,
         idleTimeout: TimeAmount, logger: Logger) {
        state = .waiting(promise)
        self.setup = setup
        self.idleTimeout = idleTimeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // A connection that sends no request is closed after the idle timeout, as Hummingbird closes its own.
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        idleTimer = context.eventLoop.scheduleTask(in: idleTimeout) { loopBound.value.close(promise: nil) }
    }

    /// Also when the connection closes before its first request: its task then has nothing to do.
    func handlerRemoved(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        if case .waiting(let promise) = state {
            state = .handedOver
            promise.succeed(.detached)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch state {
        case .waiting(let promise):
            guard case .head(let head) = unwrapInboundIn(data) else {
                // Cannot happen (the codec's first part is a head); Hummingbird answers whatever it is.
                handOver(context: context, promise: promise) { $0.fireChannelRead(data) }
                return
            }
            idleTimer?.cancel()
            guard setup.isDetached(head) else {
                handOver(context: context, promise: promise) { $0.fireChannelRead(data) }
                return
            }
            let connection = DetachedConnection(channel: context.channel)
            state = .detached(connection)
            promise.succeed(.detached)
            let answer = setup.answer
            Task { await answer(head, connection) }
        case .detached:
            break
        case .handedOver:
            context.fireChannelRead(data)
        }
    }

    /// Adds Hummingbird's handlers after this one, passes them what this handler received, and leaves.
    private func handOver(context: ChannelHandlerContext, promise: EventLoopPromise<StreamingHTTP1Channel.Decision>,
                          then pass: (ChannelHandlerContext) -> Void) {
        state = .handedOver
        do {
            promise.succeed(try setup.handToHummingbird(context.channel, logger: logger))
        } catch {
            promise.fail(error)
            context.close(promise: nil)
            return
        }
        pass(context)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch state {
        case .waiting(let promise):
            // A request that does not parse: Hummingbird answers 400 and closes, as it does on any connection.
            handOver(context: context, promise: promise) { $0.fireErrorCaught(error) }
        case .detached:
            context.close(promise: nil)
        case .handedOver:
            context.fireErrorCaught(error)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The client closed its side (the server allows half-closure): a stream has no one left to read it.
        if case .detached = state, case .inputClosed = event as? ChannelEvent {
            context.close(promise: nil)
            return
        }
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch state {
        case .waiting: context.close(promise: nil)
        case .detached(let connection): connection.quiesce()
        case .handedOver: context.fireUserInboundEventTriggered(event)
        }
    }
}
