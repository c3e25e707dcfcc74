import HTTPTypes
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Lets a route that answers a request on a kept-alive connection (served by Hummingbird's task, not detached) learn
/// when the connection closes: each request head is tagged with its connection's number (`ConnectionTagHandler`),
/// and the route asks for that connection's close. An event stream that counts for presence uses it to stop counting
/// the moment its client goes, rather than at its next write.
public enum ConnectionCloseRegistry {
    /// The header carrying the tag. A client's own header of that name is removed before the tag is set.
    public static let header = HTTPField.Name("X-LiveRelay-Connection")!

    /// Open connections' close futures by number, and the last number given.
    private static let connections = NIOLockedValueBox((closes: [UInt64: EventLoopFuture<Void>](), last: UInt64(0)))

    static func register(_ channel: any Channel) -> UInt64 {
        let id = connections.withLockedValue { connections in
            connections.last += 1
            connections.closes[connections.last] = channel.closeFuture
            return connections.last
        }
        channel.closeFuture.whenComplete { _ in
            _ = connections.withLockedValue { $0.closes.removeValue(forKey: id) }
        }
        return id
    }

    /// Calls `body` once the connection the request came on closes (at once if it has); false when the request did
    /// not come on a tagged connection that is still open.
    @discardableResult
    public static func onClose(of headers: HTTPFields, _ body: @escaping @Sendable () -> Void) -> Bool {
        guard let tag = headers[header], let id = UInt64(tag),
              let close = connections.withLockedValue({ $0.closes[id] }) else { return false }
        close.whenComplete { _ in body() }
        return true
    }
}

/// Tags every request head of a connection handed to Hummingbird with the connection's number.
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
}
