import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Lets a route that answers a request on a kept-alive connection (served by Hummingbird's task, not detached) learn
/// when its client goes: each request head is tagged with its connection's number (`ConnectionTagHandler`), and the
/// route asks for that connection's end. An event stream uses it to end its subscription (and stop counting for
/// presence) the moment its client goes, rather than when a write fails.
///
/// A client goes when the connection closes, or when it ends its side (FIN: the server allows half-closure, so the
/// channel stays open, and Hummingbird reads no further while the stream's response runs). An app that read all it
/// was sent and closes its socket ends with FIN, not a reset: without the second case its stream would count until
/// a heartbeat write failed, up to two heartbeats later.
public enum ConnectionCloseRegistry {
    /// The header carrying the tag. A client's own header of that name is removed before the tag is set.
    public static let header = HTTPField.Name("X-LiveRelay-Connection")!

    /// Open connections' "client gone" futures by number, and the last number given.
    private static let connections = NIOLockedValueBox((gone: [UInt64: EventLoopPromise<Void>](), last: UInt64(0)))

    static func register(_ channel: any Channel) -> UInt64 {
        let gone = channel.eventLoop.makePromise(of: Void.self)
        let id = connections.withLockedValue { connections in
            connections.last += 1
            connections.gone[connections.last] = gone
            return connections.last
        }
        channel.closeFuture.whenComplete { _ in
            _ = connections.withLockedValue { $0.gone.removeValue(forKey: id) }
            gone.succeed()
        }
        return id
    }

    /// The client of connection `id` ended its side: whoever waits for it to go is told now.
    static func inputClosed(_ id: UInt64) {
        connections.withLockedValue { $0.gone[id] }?.succeed()
    }

    /// Calls `body` once the client of the connection the request came on goes (at once if it has); never when the
    /// request did not come on a tagged connection that is still open (a detached stream learns of its close itself).
    public static func onClose(of headers: HTTPFields, _ body: @escaping @Sendable () -> Void) {
        guard let tag = headers[header], let id = UInt64(tag),
              let gone = connections.withLockedValue({ $0.gone[id] }) else { return }
        gone.futureResult.whenComplete { _ in body() }
    }
}

/// Tags every request head of a connection handed to Hummingbird with the connection's number, and reports the
/// client's end of its side.
final class ConnectionTagHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private var id: UInt64?

    func handlerAdded(context: ChannelHandlerContext) {
        id = ConnectionCloseRegistry.register(context.channel)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data), let id else {
            context.fireChannelRead(data)
            return
        }
        head.headerFields[ConnectionCloseRegistry.header] = String(id)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let id, case .inputClosed = event as? ChannelEvent { ConnectionCloseRegistry.inputClosed(id) }
        context.fireUserInboundEventTriggered(event)
    }
}
