import NIOCore
import NIOHTTP2

/// The answers of one batch, filled in as they arrive; all on the pool's event loop.
///
/// The batch gives up on its open requests only when the server has answered none of them for `silenceSeconds` (the
/// connection or the server is stuck), or after `batchSeconds` in all. A fixed deadline per request was wrong: a
/// server working through hundreds of requests on a loaded machine answers the last ones late, and a request given up
/// on after the server accepted it is sent again (the fault suite saw 608 such duplicates under CPU load).
final class HTTP2Batch {
    typealias Limits = HTTP2Client.Limits

    private var results: [Result<HTTP2Response, HTTP2ClientError>?]
    private var remaining: Int
    private let promise: EventLoopPromise<[Result<HTTP2Response, HTTP2ClientError>]>
    private var streams: [(HTTP2Connection, HTTP2StreamID)?]
    private let limits: Limits
    /// Time comes from the loop (a test's embedded loop moves it by hand).
    private let eventLoop: any EventLoop
    private let started: NIODeadline
    private var lastAnswer: NIODeadline
    private var timer: Scheduled<Void>?

    init(count: Int, limits: Limits, eventLoop: any EventLoop,
         promise: EventLoopPromise<[Result<HTTP2Response, HTTP2ClientError>]>) {
        self.results = Array(repeating: nil, count: count)
        self.streams = Array(repeating: nil, count: count)
        self.remaining = count
        self.limits = limits
        self.eventLoop = eventLoop
        self.started = eventLoop.now
        self.lastAnswer = eventLoop.now
        self.promise = promise
    }

    /// Checks the limits when the silence would have lasted long enough, and again after every later answer.
    func startTimer() {
        let silence = TimeAmount.nanoseconds(Int64(limits.silenceSeconds * 1e9))
        let end = started + .nanoseconds(Int64(limits.batchSeconds * 1e9))
        let check = min(lastAnswer + silence, end)
        timer = eventLoop.assumeIsolated().scheduleTask(deadline: check) { [self] in
            let now = eventLoop.now
            if now >= end {
                expire(.timedOut(seconds: limits.batchSeconds), retiring: false)
            } else if now >= lastAnswer + silence {
                expire(.timedOut(seconds: limits.silenceSeconds), retiring: true)
            } else {
                startTimer()
            }
        }
    }

    /// The connection a request went on finished its TLS handshake: that was the server's answer, and the silence is
    /// counted from here. A new connection's handshake on a loaded machine (or across an ocean) is not taken for the
    /// server saying nothing; one that never ends is still bounded by the silence counted from the batch's start.
    func connectionSecured() {
        lastAnswer = max(lastAnswer, eventLoop.now)
    }

    /// True while a request has no answer yet (not even "timed out": then it must not be sent any more).
    func isWaiting(_ index: Int) -> Bool { results[index] == nil }

    /// Remembers the stream of a request still waiting for its answer (to reset it at the deadline).
    func track(_ index: Int, on connection: HTTP2Connection, streamID: HTTP2StreamID) {
        if results[index] == nil { streams[index] = (connection, streamID) }
    }

    func complete(_ index: Int, _ result: Result<HTTP2Response, HTTP2ClientError>) {
        guard results[index] == nil else { return }
        results[index] = result
        lastAnswer = eventLoop.now
        remaining -= 1
        if remaining == 0 {
            timer?.cancel()
            streams = Array(repeating: nil, count: streams.count)
            promise.succeed(results.map { $0! })
        }
    }

    /// A limit passed: requests still open are reset and count as unanswered. After a silence, the connections they
    /// were on are retired first (a connection that answers nothing may be dead without a word, as after a network
    /// path dropped: TCP would keep it for a quarter of an hour), so the next batch goes on a new connection, and each
    /// closes once nothing waits on it. A batch that reached its overall limit was answered steadily: its connection
    /// stays.
    private func expire(_ error: HTTP2ClientError, retiring: Bool) {
        let open = results.indices.filter { results[$0] == nil }
        if retiring {
            for case let (connection, _)? in open.map({ streams[$0] }) { connection.retire() }
        }
        for index in open {
            if let (connection, streamID) = streams[index] { connection.cancel(streamID) }
            complete(index, .failure(error))
        }
    }
}
