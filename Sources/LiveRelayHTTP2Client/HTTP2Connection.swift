import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import NIOTLS

/// One HTTP/2 client connection, working on frames directly: each request is a HEADERS and a DATA frame on a new
/// stream, answers are matched by stream ID, and a whole batch of requests leaves in one flush (one TLS record
/// run and one write), which is what makes it cheaper than a client that flushes every request on its own.
///
/// Lives on its channel's event loop: every method must be called there.
final class HTTP2Connection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame
    typealias Completion = (Result<HTTP2Response, HTTP2ClientError>) -> Void

    /// Received DATA bytes acknowledged to the peer with one connection-level WINDOW_UPDATE.
    static let windowUpdateThreshold = 32 * 1024

    private var context: ChannelHandlerContext?
    /// Succeeds once the connection is active and the HTTP/2 preface has gone out: only then may streams open.
    let ready: EventLoopPromise<Void>
    /// Succeeds once the TLS handshake has ended with HTTP/2 agreed: the server's first answer on the connection.
    private let secured: EventLoopPromise<Void>
    /// `secured` has succeeded (read on every batch, where a callback on its future would cost an allocation).
    private var isSecured = false
    private var table = HTTP2StreamTable<Completion>()
    private var unacknowledgedBytes = 0
    private var liveness: HTTP2Liveness
    private var livenessTimer: Scheduled<Void>?

    /// False once the peer sent GOAWAY, the connection closed, or stream IDs are running out: new requests go to a
    /// new connection, and this one closes when its last stream is answered.
    var isUsable: Bool { context != nil && !table.closing }

    /// - Parameter idlePing: how long the connection may read nothing, no request open, before it sends a PING;
    ///   the PING must be answered within that time or 10 s, whichever is shorter.
    init(eventLoop: any EventLoop, idlePing: TimeAmount) {
        self.ready = eventLoop.makePromise(of: Void.self)
        self.secured = eventLoop.makePromise(of: Void.self)
        self.liveness = HTTP2Liveness(idle: idlePing, answer: min(idlePing, .seconds(10)), now: eventLoop.now)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { becameActive(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        livenessTimer?.cancel()
        ready.fail(HTTP2ClientError.connectionClosed)
        secured.fail(HTTP2ClientError.connectionClosed)
    }

    func channelActive(context: ChannelHandlerContext) {
        becameActive(context: context)
        context.fireChannelActive()
    }

    private func becameActive(context: ChannelHandlerContext) {
        ready.succeed(())
        guard livenessTimer == nil else { return }
        liveness.read(at: context.eventLoop.now)
        scheduleLivenessCheck(on: context.eventLoop)
    }

    /// Runs `body` once the TLS handshake has ended with HTTP/2 agreed: at once if it has, never if the connection
    /// closes first. On this event loop.
    func whenSecured(_ body: @escaping () -> Void) {
        if isSecured { body() } else { secured.futureResult.assumeIsolated().whenSuccess(body) }
    }

    /// Writes one request without flushing. The completion runs once, on this event loop. Returns the stream ID.
    @discardableResult
    func write(headers: HPACKHeaders, body: ByteBuffer, completion: @escaping Completion) -> HTTP2StreamID? {
        guard let context, let streamID = table.open(completion) else {
            completion(.failure(.notProcessed("the connection is closing")))
            return nil
        }
        let written = context.eventLoop.makePromise(of: Void.self)
        let head = HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))
        let data = HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))
        context.write(wrapOutboundOut(head), promise: nil)
        context.write(wrapOutboundOut(data), promise: written)
        written.futureResult.assumeIsolated().whenFailure { [weak self] error in
            // The request did not leave whole (the connection went away, or the stream was refused before it
            // opened), so the server cannot have processed it.
            guard let self else { return }
            perform(self.table.notSent(streamID, because: "\(error)"))
        }
        return streamID
    }

    func flush() {
        context?.flush()
    }

    /// Forgets a request whose deadline passed and resets its stream.
    func cancel(_ streamID: HTTP2StreamID) {
        guard table.cancel(streamID), let context else { return }
        context.writeAndFlush(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        closeIfDrained()
    }

    func close() {
        table.close()
        context?.close(promise: nil)
    }

    /// Takes no new streams, and closes once the streams open on it are answered or given up on.
    func retire() {
        table.close()
        closeIfDrained()
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        liveness.read(at: context.eventLoop.now)
        switch frame.payload {
        case .headers(let headers):
            perform(table.headers(headers.headers, endStream: headers.endStream, on: streamID))
        case .data(let data):
            acknowledge(data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0), context: context)
            let chunk: ByteBuffer
            if case .byteBuffer(let buffer) = data.data { chunk = buffer } else { chunk = ByteBuffer() }
            perform(table.data(chunk, endStream: data.endStream, on: streamID))
        case .rstStream(let code):
            perform(table.reset(streamID, code: code))
        case .goAway(let lastStreamID, let code, _):
            perform(table.goAway(lastStreamID: lastStreamID, code: code))
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            // Normally every stream was answered before it closed; this catches streams NIOHTTP2 closed itself.
            perform(table.closed(closed.streamID, reason: closed.reason))
        case TLSUserEvent.handshakeCompleted(let negotiated):
            if negotiated != "h2" {
                let alpn = negotiated ?? "none"
                perform(table.fail(all: .protocolError("the server did not agree to HTTP/2 (ALPN: \(alpn))")))
                close()
            } else {
                isSecured = true
                secured.succeed(())
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        livenessTimer?.cancel()
        ready.fail(HTTP2ClientError.connectionClosed)
        secured.fail(HTTP2ClientError.connectionClosed)
        perform(table.fail(all: .connectionClosed))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        ready.fail(HTTP2ClientError.protocolError("\(error)"))
        secured.fail(HTTP2ClientError.protocolError("\(error)"))
        perform(table.fail(all: .protocolError("\(error)")))
        context.close(promise: nil)
    }

    // MARK: Helpers

    private func scheduleLivenessCheck(on eventLoop: any EventLoop) {
        livenessTimer = eventLoop.assumeIsolated().scheduleTask(in: liveness.checkEvery) { [self] in
            guard let context else { return }
            switch liveness.check(at: eventLoop.now, requestsOpen: !table.streams.isEmpty) {
            case .wait:
                break
            case .ping:
                let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(), ack: false))
                context.writeAndFlush(wrapOutboundOut(ping), promise: nil)
            case .dead:
                // Nothing came back, not even the PING's answer: new requests go on a new connection.
                perform(table.fail(all: .connectionClosed))
                close()
                return
            }
            scheduleLivenessCheck(on: eventLoop)
        }
    }

    private func acknowledge(_ bytes: Int, context: ChannelHandlerContext) {
        guard bytes > 0 else { return }
        unacknowledgedBytes += bytes
        if unacknowledgedBytes >= Self.windowUpdateThreshold {
            let increment = unacknowledgedBytes
            unacknowledgedBytes = 0
            let update = HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))
            context.writeAndFlush(wrapOutboundOut(update), promise: nil)
        }
    }

    /// Hands answers to their waiters, then closes the connection if it is closing and nothing waits.
    private func perform(_ answers: [HTTP2StreamTable<Completion>.Answer]) {
        for answer in answers { answer.waiter(answer.result) }
        closeIfDrained()
    }

    private func perform(_ answer: HTTP2StreamTable<Completion>.Answer?) {
        perform(answer.map { [$0] } ?? [])
    }

    private func closeIfDrained() {
        if table.isDrained, let context { context.close(promise: nil) }
    }
}
