import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose request takes longer than `deadline` to arrive whole, from its head to the end of its
/// body. The idle timeout restarts at every byte, so without this a client that sends a byte every half minute holds
/// a connection, and the task that waits for its body, for as long as it likes (a slow-body attack); with it, every
/// request is bounded in time as it is in size. An event-loop timer per request, cancelled by the body's end.
final class RequestDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let deadline: TimeAmount
    private var timer: Scheduled<Void>?

    init(deadline: TimeAmount) {
        self.deadline = deadline
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            timer?.cancel()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: deadline) { loopBound.value.close(promise: nil) }
        case .end:
            timer?.cancel()
            timer = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }
}
