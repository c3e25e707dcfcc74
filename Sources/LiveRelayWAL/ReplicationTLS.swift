import NIOCore
import NIOSSL

/// TLS for the replication connection, as `DATABASE_URL`'s `sslmode` asks for every other connection (an endpoint
/// without one never asks: `sslmode=disable`).
public struct ReplicationTLS: Sendable {
    public var context: NIOSSLContext
    /// The name the certificate must carry; nil for an address (checked against the certificate's IP entries).
    public var serverName: String?
    /// TLS or no connection (`require` and stricter); false: in clear when the server has no TLS (`prefer`).
    public var required: Bool

    public init(context: NIOSSLContext, serverName: String?, required: Bool) {
        self.context = context
        self.serverName = serverName
        self.required = required
    }
}

/// PostgreSQL's way into TLS: before the startup message the client sends an SSLRequest, and the server answers one
/// byte, `S` (a TLS handshake follows) or `N` (no TLS here). On `S` this handler puts NIOSSL's client handler at the
/// front of the pipeline and leaves it; its promise says whether the connection is encrypted, or fails when TLS was
/// required and refused, or when the connection ended first.
final class TLSNegotiator: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// SSLRequest's code: 1234 in the high 16 bits, 5679 in the low.
    static let requestCode: Int32 = 80_877_103

    private let tls: ReplicationTLS
    private let promise: EventLoopPromise<Bool>
    private var answered = false

    init(_ tls: ReplicationTLS, promise: EventLoopPromise<Bool>) {
        self.tls = tls
        self.promise = promise
    }

    func channelActive(context: ChannelHandlerContext) {
        var request = context.channel.allocator.buffer(capacity: 8)
        request.writeInteger(Int32(8))
        request.writeInteger(Self.requestCode)
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        guard !answered, let answer = bytes.readInteger(as: UInt8.self) else { return }
        answered = true
        guard answer == UInt8(ascii: "S") || answer == UInt8(ascii: "N") else {
            return fail(ReplicationFailure.unexpectedMessage(answer, while: "asking for TLS"), context: context)
        }
        // Anything after the answer came before the handshake, unencrypted: it cannot be trusted (CVE-2021-23222).
        guard bytes.readableBytes == 0 else { return fail(ReplicationFailure.brokenStream, context: context) }
        if answer == UInt8(ascii: "N") {
            guard !tls.required else { return fail(ReplicationFailure.tlsRefused, context: context) }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return promise.succeed(false)
        }
        do {
            let tls = try NIOSSLClientHandler(context: tls.context, serverHostname: tls.serverName)
            try context.pipeline.syncOperations.addHandler(tls, position: .first)
        } catch {
            return fail(error, context: context)
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        promise.succeed(true)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !answered {
            answered = true
            promise.fail(ReplicationFailure.closed(while: "asking for TLS"))
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !answered {
            answered = true
            promise.fail(error)
        }
        context.fireErrorCaught(error)
    }

    private func fail(_ error: any Error, context: ChannelHandlerContext) {
        promise.fail(error)
        context.close(promise: nil)
    }
}
