import HTTPTypes
import HummingbirdCore
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Synchronization

/// A connection whose one response is written straight to its channel, from any thread, with no task waiting on it:
/// the event stream's, which stays open for hours and would otherwise keep a suspended task of several kilobytes per
/// client (see `StreamingHTTP1Channel`).
///
/// The response's head is written by `detach()`; each `write(_:)` is one chunk, flushed; `finish()` ends the response
/// and closes the connection.
public final class DetachedConnection: Sendable {
    public let channel: any Channel
    private let state: NIOLockedValueBox<State>

    struct State {
        var head: HTTPResponse?
        var detached = false
        /// Called once when the server stops (the relay's graceful shutdown), on the channel's event loop.
        var onQuiesce: (@Sendable () -> Void)?
    }

    private let writer: LoopWriter
    /// The HTTP/1 encoder's place in the pipeline: a chunk written there goes straight to the socket.
    private let encoder: NIOLoopBound<ChannelHandlerContext>?
    /// Chunks are framed here and written below the encoder (`write(_:)`): the head went out chunked. Read at every
    /// event of every stream, so an atomic rather than the state's lock.
    private let framesChunks = Atomic<Bool>(false)

    /// On the channel's event loop, once its pipeline is set up.
    init(channel: any Channel) {
        self.channel = channel
        state = NIOLockedValueBox(State())
        writer = LoopWriter.of(channel.eventLoop)
        encoder = (try? channel.pipeline.syncOperations.context(handlerType: HTTPResponseEncoder.self))
            .map { NIOLoopBound($0, eventLoop: channel.eventLoop) }
    }

    /// True while the client reads fast enough (the channel's write buffer is under its high-water mark).
    public var isWritable: Bool { channel.isWritable }

    /// Completes when the connection is closed (by either side).
    public var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Writes one chunk of the response body and flushes it.
    public func write(_ buffer: ByteBuffer) {
        guard buffer.readableBytes > 0 else { return }  // an empty chunk would end a chunked body
        let framed = framesChunks.load(ordering: .acquiring)
        writer.enqueue(self, [framed ? .framed(Self.chunk(buffer)) : .write(.body(buffer))])
    }

    /// Ends the response (after `last`, if given) and closes the connection once it is written.
    public func finish(last: ByteBuffer? = nil) {
        writer.enqueue(self, (last.map { [.write(.body($0))] } ?? []) + [.endAndClose])
    }

    /// `buffer` as one chunk of a chunked body (RFC 9112 §7.1): its size in hex, CRLF, the bytes, CRLF.
    static func chunk(_ buffer: ByteBuffer) -> ByteBuffer {
        let size = String(buffer.readableBytes, radix: 16)
        var chunk = ByteBuffer()
        chunk.reserveCapacity(size.utf8.count + buffer.readableBytes + 4)
        chunk.writeString(size)
        chunk.writeStaticString("\r\n")
        chunk.writeImmutableBuffer(buffer)
        chunk.writeStaticString("\r\n")
        return chunk
    }

    /// On the event loop: `bytes`, already framed, written below the HTTP encoder (only when there is one, and it
    /// framed the head as chunked: `framesChunks`).
    func writeBelowEncoder(_ bytes: ByteBuffer) {
        encoder?.value.write(NIOAny(IOData.byteBuffer(bytes)), promise: nil)
    }

    /// On the event loop: flushes what was written, from the encoder's place when there is one (no handler above it
    /// holds anything back).
    func flushOnLoop() {
        if let encoder { encoder.value.flush() } else { channel.flush() }
    }

    /// Sets what to do when the server stops; without it the connection is closed.
    public func onQuiesce(_ action: @escaping @Sendable () -> Void) {
        state.withLockedValue { $0.onQuiesce = action }
    }

    var isDetached: Bool { state.withLockedValue { $0.detached } }

    func setHead(_ head: HTTPResponse) {
        state.withLockedValue { $0.head = head }
    }

    /// Writes the response's head: from here on the response is the caller's, and stays open when the body returns.
    func detach() {
        let head = state.withLockedValue { state -> HTTPResponse? in
            guard !state.detached else { return nil }
            state.detached = true
            // Written once: not kept for the hours the stream stays open.
            defer { state.head = nil }
            return state.head
        }
        guard let head else { return }
        // NIO's encoder frames a response with no length of its own as chunked (HTTP/1.1, a GET's answer). Set
        // before the head is queued, so that every chunk queued after it is framed the same way.
        let chunked = head.headerFields[.contentLength] == nil && head.headerFields[.transferEncoding] == nil
        framesChunks.store(encoder != nil && chunked, ordering: .releasing)
        writer.enqueue(self, [.write(.head(head))])
    }

    func quiesce() {
        if let action = state.withLockedValue({ $0.onQuiesce }) {
            action()
        } else {
            channel.close(promise: nil)
        }
    }
}

/// The body writer of a response answered by `StreamingHTTP1Channel`. A body that wants to keep the connection
/// without a task calls `detach()` and returns; any other body is collected and sent when it finishes, with
/// `Connection: close`.
public struct DetachableBodyWriter: ResponseBodyWriter {
    let connection: DetachedConnection
    let collected: NIOLockedValueBox<ByteBuffer>

    init(connection: DetachedConnection) {
        self.connection = connection
        collected = NIOLockedValueBox(ByteBuffer())
    }

    /// Writes the response's head and hands the connection to the caller.
    public func detach() -> DetachedConnection {
        connection.detach()
        return connection
    }

    public mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        _ = collected.withLockedValue { $0.writeBuffer(&buffer) }
    }

    public consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}

    /// The collected body of a response that was not detached.
    var body: ByteBuffer { collected.withLockedValue { $0 } }
}

extension DetachedConnection {
    /// Writes a whole response that was not detached, then closes the connection.
    func writeWhole(_ head: HTTPResponse, body: ByteBuffer) {
        let chunk: [LoopWriter.Action] = body.readableBytes > 0 ? [.write(.body(body))] : []
        writer.enqueue(self, [.write(.head(head))] + chunk + [.endAndClose])
    }
}
