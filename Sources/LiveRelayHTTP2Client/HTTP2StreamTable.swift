import NIOCore
import NIOHPACK
import NIOHTTP2

/// The streams of one HTTP/2 client connection as a value: which requests wait for an answer, what each frame does
/// to them, and when the connection must close. No channel, no event loop: `HTTP2Connection` feeds it the frames it
/// reads and performs what it returns (answers handed to their waiters, the connection closed).
///
/// A waiter is answered exactly once: with the response when its stream ends, with `notProcessed` when the server
/// cannot have processed the request (refused, or past a GOAWAY's last stream: safe to send again), or with the
/// error that ended the stream or the connection.
struct HTTP2StreamTable<Waiter> {
    struct Stream {
        var waiter: Waiter
        var status: Int?
        var headers: HPACKHeaders = [:]
        var body: ByteBuffer?
    }

    /// An answer to hand to a waiter.
    typealias Answer = (waiter: Waiter, result: Result<HTTP2Response, HTTP2ClientError>)

    /// The most response body kept per stream (push services answer with a small JSON object).
    static var maximumBodyBytes: Int { 16 * 1024 }

    private(set) var streams: [HTTP2StreamID: Stream] = [:]
    private(set) var nextStreamID: Int32 = 1
    /// No new stream opens: the peer sent GOAWAY, the connection is closing, or stream IDs are running out.
    private(set) var closing = false

    /// True when the connection should close now: it is closing and no stream waits.
    var isDrained: Bool { closing && streams.isEmpty }

    /// Opens a stream for a request; nil when the connection takes no new streams.
    mutating func open(_ waiter: Waiter) -> HTTP2StreamID? {
        guard !closing else { return nil }
        let id = HTTP2StreamID(nextStreamID)
        nextStreamID += 2
        if nextStreamID > Int32.max - 4 { closing = true }
        streams[id] = Stream(waiter: waiter)
        return id
    }

    /// A HEADERS frame: the response's head (informational heads are skipped), or trailers.
    mutating func headers(_ headers: HPACKHeaders, endStream: Bool, on id: HTTP2StreamID) -> Answer? {
        guard var stream = streams[id] else { return nil }
        if stream.status == nil, let status = headers.first(name: ":status").flatMap({ Int($0) }) {
            if (100..<200).contains(status) { return nil }
            stream.status = status
            stream.headers = headers
        }
        return update(stream, on: id, ended: endStream)
    }

    /// A DATA frame: body kept up to `maximumBodyBytes` (the rest is dropped, the answer still comes).
    mutating func data(_ chunk: ByteBuffer, endStream: Bool, on id: HTTP2StreamID) -> Answer? {
        guard var stream = streams[id] else { return nil }
        var chunk = chunk
        if (stream.body?.readableBytes ?? 0) + chunk.readableBytes <= Self.maximumBodyBytes {
            if stream.body == nil { stream.body = chunk } else { stream.body!.writeBuffer(&chunk) }
        }
        return update(stream, on: id, ended: endStream)
    }

    /// RST_STREAM from the peer, or a stream NIOHTTP2 closed with an error.
    mutating func reset(_ id: HTTP2StreamID, code: HTTP2ErrorCode) -> Answer? {
        fail(id, code == .refusedStream ? .notProcessed("REFUSED_STREAM") : .streamReset("\(code)"))
    }

    /// NIOHTTP2 closed a stream: normally already answered; one that ended cleanly with a head is answered now.
    mutating func closed(_ id: HTTP2StreamID, reason: HTTP2ErrorCode?) -> Answer? {
        guard let stream = streams[id] else { return nil }
        guard reason == nil, stream.status != nil else { return reset(id, code: reason ?? .protocolError) }
        streams[id] = nil
        return Self.answer(stream)
    }

    /// GOAWAY: no new streams; those past `lastStreamID` were not processed (safe to send again elsewhere); those up
    /// to it still get their answers.
    mutating func goAway(lastStreamID: HTTP2StreamID, code: HTTP2ErrorCode) -> [Answer] {
        closing = true
        return streams.keys.filter { $0 > lastStreamID }.sorted().compactMap {
            fail($0, .notProcessed("GOAWAY \(code) after stream \(lastStreamID)"))
        }
    }

    /// The caller gave up on a stream (its deadline passed): forgotten; true when a RST_STREAM should go out.
    mutating func cancel(_ id: HTTP2StreamID) -> Bool {
        streams.removeValue(forKey: id) != nil
    }

    /// The request did not leave whole (a write failed): the server cannot have processed it.
    mutating func notSent(_ id: HTTP2StreamID, because error: String) -> Answer? {
        fail(id, .notProcessed(error))
    }

    /// No new streams (the caller closes the connection, or the server is not speaking HTTP/2).
    mutating func close() {
        closing = true
    }

    /// The connection is gone or broken: every waiting stream gets `error`.
    mutating func fail(all error: HTTP2ClientError) -> [Answer] {
        closing = true
        let failed = streams.sorted { $0.key < $1.key }
        streams = [:]
        return failed.map { ($0.value.waiter, .failure(error)) }
    }

    private mutating func update(_ stream: Stream, on id: HTTP2StreamID, ended: Bool) -> Answer? {
        guard ended else {
            streams[id] = stream
            return nil
        }
        streams[id] = nil
        return Self.answer(stream)
    }

    private mutating func fail(_ id: HTTP2StreamID, _ error: HTTP2ClientError) -> Answer? {
        guard let stream = streams.removeValue(forKey: id) else { return nil }
        return (stream.waiter, .failure(error))
    }

    private static func answer(_ stream: Stream) -> Answer {
        guard let status = stream.status else {
            return (stream.waiter, .failure(.protocolError("the stream ended without a :status")))
        }
        return (stream.waiter, .success(HTTP2Response(status: status, headers: stream.headers, body: stream.body)))
    }
}
