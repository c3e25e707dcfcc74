import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A TCP proxy to a local port whose connections can be frozen: a frozen connection stays open and forwards nothing
/// either way, as a connection does whose network path dropped without a reset. Connections made later forward.
final class FreezingProxy: Sendable {
    private let channel: any Channel
    private let state = NIOLockedValueBox(State())

    private struct State {
        var accepted = 0
        var closedByClients = 0
        var pairs: [Pair] = []
    }

    /// Connections accepted so far.
    var accepted: Int { state.withLockedValue { $0.accepted } }
    /// Connections whose client closed them, frozen ones included.
    var closedByClients: Int { state.withLockedValue { $0.closedByClients } }
    var port: Int { channel.localAddress?.port ?? 0 }

    init(to targetPort: Int, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws {
        let state = self.state
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { inbound in
                let pair = Pair(inbound: inbound) { state.withLockedValue { $0.closedByClients += 1 } }
                state.withLockedValue {
                    $0.accepted += 1
                    $0.pairs.append(pair)
                }
                return inbound.pipeline.addHandler(Forwarder(pair: pair, toTarget: true)).flatMap {
                    ClientBootstrap(group: inbound.eventLoop)
                        .channelInitializer { $0.pipeline.addHandler(Forwarder(pair: pair, toTarget: false)) }
                        .connect(host: "127.0.0.1", port: targetPort)
                        .map { pair.connected($0) }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// Every connection open now forwards nothing more.
    func freeze() {
        for pair in state.withLockedValue({ $0.pairs }) { pair.isFrozen.withLockedValue { $0 = true } }
    }

    func close() async throws {
        for pair in state.withLockedValue({ $0.pairs }) { pair.close() }
        try await channel.close()
    }

    /// One client connection and its connection to the target. Bytes that arrive before the target's connection is
    /// made wait for it.
    final class Pair: Sendable {
        let inbound: any Channel
        let isFrozen = NIOLockedValueBox(false)
        let clientClosed: @Sendable () -> Void
        private let target = NIOLockedValueBox<(channel: (any Channel)?, waiting: [ByteBuffer])>((nil, []))

        init(inbound: any Channel, clientClosed: @escaping @Sendable () -> Void) {
            self.inbound = inbound
            self.clientClosed = clientClosed
        }

        func connected(_ channel: any Channel) {
            let waiting = target.withLockedValue { state in
                state.channel = channel
                defer { state.waiting = [] }
                return state.waiting
            }
            for buffer in waiting { channel.writeAndFlush(buffer, promise: nil) }
        }

        func forward(_ buffer: ByteBuffer, toTarget: Bool) {
            guard !isFrozen.withLockedValue({ $0 }) else { return }
            if !toTarget {
                inbound.writeAndFlush(buffer, promise: nil)
                return
            }
            let channel = target.withLockedValue { state -> (any Channel)? in
                if state.channel == nil { state.waiting.append(buffer) }
                return state.channel
            }
            channel?.writeAndFlush(buffer, promise: nil)
        }

        func close() {
            inbound.close(promise: nil)
            target.withLockedValue { $0.channel }?.close(promise: nil)
        }
    }

    private final class Forwarder: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        let pair: Pair
        let toTarget: Bool

        init(pair: Pair, toTarget: Bool) {
            self.pair = pair
            self.toTarget = toTarget
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            pair.forward(unwrapInboundIn(data), toTarget: toTarget)
        }

        func channelInactive(context: ChannelHandlerContext) {
            if toTarget { pair.clientClosed() }
            // One side closed: so does the other, unless frozen (a dead path tells neither side).
            if !pair.isFrozen.withLockedValue({ $0 }) { pair.close() }
            context.fireChannelInactive()
        }
    }
}
