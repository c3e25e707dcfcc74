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

    private struct Stream {
        var completion: Completion
        var status: Int?
        var headers: HPACKHeaders = [:]
        var body: ByteBuffer?
    }

    /// The most response body kept per stream (push services answer with a small JSON object).
    static let maximumBodyBytes = 16 * 1024
    /// Received DATA bytes acknowledged to the peer with one connection-level WINDOW_UPDATE.
    static let windowUpdateThreshold = 32 * 1024

    private var context: ChannelHandlerContext?
    /// Succeeds once the connection is active and the HTTP/2 preface has gone out: only then may streams open.
    let ready: EventLoopPromise<Void>
    private var streams: [HTTP2StreamID: Stream] = [:]
    private var nextStreamID: Int32 = 1
    private var unacknowledgedBytes = 0
    private var closing = false

    /// False once the peer sent GOAWAY, the connection closed, or stream IDs are running out: new requests go to a
    /// new connection, and this one closes when its last stream is answered.
    var isUsable: Bool { context != nil && !closing }

    init(eventLoop: any EventLoop) {
        self.ready = eventLoop.makePromise(of: Void.self)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { ready.succeed(()) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        ready.fail(HTTP2ClientError.connectionClosed)
    }

    func channelActive(context: ChannelHandlerContext) {
        ready.succeed(())
        context.fireChannelActive()
    }

    /// Writes one request without flushing. The completion runs once, on this event loop. Returns the stream ID.
    @discardableResult
    func write(headers: HPACKHeaders, body: ByteBuffer, completion: @escaping Completion) -> HTTP2StreamID? {
        guard let context, !closing else {
            completion(.failure(.notProcessed("the connection is closing")))
            return nil
        }
        let streamID = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        if nextStreamID > Int32.max - 4 { closing = true }
        streams[streamID] = Stream(completion: completion)
        let written = context.eventLoop.makePromise(of: Void.self)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .headers(.init(headers: headers)))), promise: nil)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
            promise: written)
        written.futureResult.assumeIsolated().whenFailure { [weak self] error in
            // The request did not leave whole (the connection went away, or the stream was refused before it
            // opened), so the server cannot have processed it.
            self?.fail(streamID, .notProcessed("\(error)"))
        }
        return streamID
    }

    func flush() {
        context?.flush()
    }

    /// Forgets a request whose deadline passed and resets its stream.
    func cancel(_ streamID: HTTP2StreamID) {
        guard streams.removeValue(forKey: streamID) != nil, let context else { return }
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
        closeIfDrained()
    }

    func close() {
        closing = true
        context?.close(promise: nil)
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let streamID = frame.streamID
        switch frame.payload {
        case .headers(let headers):
            guard var stream = streams[streamID] else { return }
            if stream.status == nil, let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                if (100..<200).contains(status) { return }  // informational
                stream.status = status
                stream.headers = headers.headers
            }
            if headers.endStream {
                streams[streamID] = nil
                complete(stream)
            } else {
                streams[streamID] = stream
            }
        case .data(let data):
            acknowledge(data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0), context: context)
            guard var stream = streams[streamID] else { return }
            if case .byteBuffer(var chunk) = data.data,
               (stream.body?.readableBytes ?? 0) + chunk.readableBytes <= Self.maximumBodyBytes {
                if stream.body == nil { stream.body = chunk } else { stream.body!.writeBuffer(&chunk) }
            }
            if data.endStream {
                streams[streamID] = nil
                complete(stream)
            } else {
                streams[streamID] = stream
            }
        case .rstStream(let code):
            fail(streamID, code == .refusedStream ? .notProcessed("REFUSED_STREAM") : .streamReset("\(code)"))
        case .goAway(let lastStreamID, let code, _):
            closing = true
            for id in streams.keys where id > lastStreamID {
                fail(id, .notProcessed("GOAWAY \(code) after stream \(lastStreamID)"))
            }
            closeIfDrained()
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let closed as StreamClosedEvent:
            // Normally every stream was answered before it closed; this catches streams NIOHTTP2 closed itself.
            if let stream = streams[closed.streamID] {
                if closed.reason == nil, stream.status != nil {
                    streams[closed.streamID] = nil
                    complete(stream)
                } else {
                    let code = closed.reason ?? .protocolError
                    fail(closed.streamID, code == .refusedStream ? .notProcessed("REFUSED_STREAM") : .streamReset("\(code)"))
                }
            }
        case TLSUserEvent.handshakeCompleted(let negotiated):
            if negotiated != "h2" {
                failAll(.protocolError("the server did not agree to HTTP/2 (ALPN: \(negotiated ?? "none"))"))
                close()
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = true
        ready.fail(HTTP2ClientError.connectionClosed)
        failAll(.connectionClosed)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        closing = true
        ready.fail(HTTP2ClientError.protocolError("\(error)"))
        failAll(.protocolError("\(error)"))
        context.close(promise: nil)
    }

    // MARK: Helpers

    private func acknowledge(_ bytes: Int, context: ChannelHandlerContext) {
        guard bytes > 0 else { return }
        unacknowledgedBytes += bytes
        if unacknowledgedBytes >= Self.windowUpdateThreshold {
            let increment = unacknowledgedBytes
            unacknowledgedBytes = 0
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))),
                                  promise: nil)
        }
    }

    private func complete(_ stream: Stream) {
        defer { closeIfDrained() }
        guard let status = stream.status else {
            stream.completion(.failure(.protocolError("the stream ended without a :status")))
            return
        }
        stream.completion(.success(HTTP2Response(status: status, headers: stream.headers, body: stream.body)))
    }

    private func fail(_ streamID: HTTP2StreamID, _ error: HTTP2ClientError) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.completion(.failure(error))
        closeIfDrained()
    }

    private func failAll(_ error: HTTP2ClientError) {
        let failed = streams
        streams = [:]
        for (_, stream) in failed { stream.completion(.failure(error)) }
    }

    private func closeIfDrained() {
        if closing, streams.isEmpty, let context { context.close(promise: nil) }
    }
}
