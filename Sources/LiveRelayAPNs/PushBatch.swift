import LiveRelayCore
import NIOCore
import NIOHTTP2

/// The answers of one batch, filled in as they arrive; all on the pool's event loop.
final class PushBatch {
    private var results: [Result<APNsResponse, APNsTransportError>?]
    private var remaining: Int
    private let promise: EventLoopPromise<[Result<APNsResponse, APNsTransportError>]>
    private var streams: [(APNsConnection, HTTP2StreamID)?]
    var timer: Scheduled<Void>?

    init(count: Int, promise: EventLoopPromise<[Result<APNsResponse, APNsTransportError>]>) {
        self.results = Array(repeating: nil, count: count)
        self.streams = Array(repeating: nil, count: count)
        self.remaining = count
        self.promise = promise
    }

    /// True while a request has no answer yet (not even "timed out": then it must not be sent any more).
    func isWaiting(_ index: Int) -> Bool { results[index] == nil }

    /// Remembers the stream of a request still waiting for its answer (to reset it at the deadline).
    func track(_ index: Int, on connection: APNsConnection, streamID: HTTP2StreamID) {
        if results[index] == nil { streams[index] = (connection, streamID) }
    }

    func complete(_ index: Int, _ result: Result<APNsResponse, APNsTransportError>) {
        guard results[index] == nil else { return }
        results[index] = result
        remaining -= 1
        if remaining == 0 {
            timer?.cancel()
            streams = Array(repeating: nil, count: streams.count)
            promise.succeed(results.map { $0! })
        }
    }

    /// The deadline passed: requests still open are reset and count as unanswered.
    func expire(after seconds: Double) {
        for index in results.indices where results[index] == nil {
            if let (connection, streamID) = streams[index] { connection.cancel(streamID) }
            complete(index, .failure(.timedOut(seconds: seconds)))
        }
    }
}
