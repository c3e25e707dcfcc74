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

    private static let closes = NIOLockedValueBox([UInt64: EventLoopFuture<Void>]())
    private static let counter = NIOLockedValueBox(UInt64(0))

    static func register(_ channel: any Channel) -> UInt64 {
        let id = counter.withLockedValue { value in
            value += 1
            return value
        }
        closes.withLockedValue { $0[id] = channel.closeFuture }
        channel.closeFuture.whenComplete { _ in _ = closes.withLockedValue { $0.removeValue(forKey: id) } }
        return id
    }

    /// Calls `body` once the connection the request came on closes (at once if it has).
    public static func onClose(of headers: HTTPFields, _ body: @escaping @Sendable () -> Void) -> Bool {
        guard let tag = headers[header], let id = UInt64(tag),
              let close = closes.withLockedValue({ $0[id] }) else { return false }
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
