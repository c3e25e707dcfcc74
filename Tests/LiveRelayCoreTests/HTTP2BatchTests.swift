import LiveRelayCore
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing
@testable import LiveRelayHTTP2Client

/// A batch waits while the server keeps answering and gives up only after a silence (or its overall limit): a request
/// given up on after the server accepted it would be sent twice.
@Suite("HTTP/2 batch limits")
struct HTTP2BatchTests {
    typealias Answers = [Result<HTTP2Response, HTTP2ClientError>]

    /// Runs a batch of `count` requests on an embedded loop; `script` answers them as time moves.
    func run(count: Int, silence: Double = 10, limit: Double = 60,
             _ script: (EmbeddedEventLoop, HTTP2Batch) -> Void) -> Answers? {
        let loop = EmbeddedEventLoop()
        let promise = loop.makePromise(of: Answers.self)
        // (The embedded loop runs the callback on this thread, inside `script`; the box only satisfies the checker.)
        let answers = NIOLockedValueBox<Answers?>(nil)
        promise.futureResult.whenSuccess { result in answers.withLockedValue { $0 = result } }
        let batch = HTTP2Batch(count: count, limits: .init(silenceSeconds: silence, batchSeconds: limit),
                              eventLoop: loop, promise: promise)
        batch.startTimer()
        script(loop, batch)
        return answers.withLockedValue { $0 }
    }

    static let ok = Result<HTTP2Response, HTTP2ClientError>.success(
        HTTP2Response(status: 200))

    @Test("answers that keep coming are waited for, however long the batch takes in all")
    func slowButSteady() throws {
        let answers = run(count: 5) { loop, batch in
            for index in 0..<5 {
                loop.advanceTime(by: .seconds(8))  // 40 s in all: four times the silence limit
                batch.complete(index, Self.ok)
            }
        }
        let result = try #require(answers)
        #expect(result.allSatisfy { if case .success = $0 { true } else { false } })
    }

    @Test("after a silence the open requests count as unanswered, the answered ones keep their answers")
    func silence() throws {
        let answers = run(count: 3) { loop, batch in
            loop.advanceTime(by: .seconds(8))
            batch.complete(0, Self.ok)
            loop.advanceTime(by: .seconds(9))  // 17 s since the start, 9 since the last answer
            loop.advanceTime(by: .milliseconds(1500))
        }
        let result = try #require(answers, "the batch did not end 10 s after its last answer")
        guard case .success = result[0] else { Issue.record("the answered request lost its answer"); return }
        for open in result[1...] {
            guard case .failure(.timedOut(let seconds)) = open else { Issue.record("not timed out: \(open)"); continue }
            #expect(seconds == 10)
        }
    }

    @Test("a batch does not end before its silence limit")
    func notEarly() {
        let answers = run(count: 2) { loop, batch in
            loop.advanceTime(by: .seconds(8))
            batch.complete(0, Self.ok)
            loop.advanceTime(by: .milliseconds(9900))  // 17.9 s since the start, 9.9 since the last answer
        }
        #expect(answers == nil)
    }

    @Test("a batch ends at its overall limit even while answers trickle in")
    func overallLimit() throws {
        let answers = run(count: 100, limit: 60) { loop, batch in
            for index in 0..<100 {
                loop.advanceTime(by: .seconds(5))
                batch.complete(index, Self.ok)
            }
        }
        let result = try #require(answers)
        let answered = result.filter { if case .success = $0 { true } else { false } }.count
        #expect(answered == 11, "answers before the 60 s limit")  // at 5, 10, … 55 s
        guard case .failure(.timedOut(let seconds)) = result[11] else { Issue.record("\(result[11])"); return }
        #expect(seconds == 60)
    }

    @Test("a connection's handshake is not counted as silence: the silence starts again when it ends")
    func handshakeIsNotSilence() throws {
        let waiting = run(count: 1) { loop, batch in
            loop.advanceTime(by: .seconds(8))  // a slow handshake
            batch.connectionSecured()
            loop.advanceTime(by: .seconds(9))  // 17 s since the start, 9 since the handshake ended
        }
        #expect(waiting == nil, "the batch counted the handshake as silence")
        let answers = run(count: 1) { loop, batch in
            loop.advanceTime(by: .seconds(8))
            batch.connectionSecured()
            loop.advanceTime(by: .milliseconds(10_500))
        }
        let result = try #require(answers, "the batch did not end 10 s after the handshake ended")
        guard case .failure(.timedOut(let seconds)) = result[0] else { Issue.record("\(result[0])"); return }
        #expect(seconds == 10)
    }

    @Test("a handshake that never ends is bounded by the silence counted from the batch's start")
    func endlessHandshake() throws {
        let answers = run(count: 2) { loop, _ in loop.advanceTime(by: .milliseconds(10_500)) }
        let result = try #require(answers, "the batch waited past its silence for a connection")
        #expect(result.allSatisfy { if case .failure(.timedOut(10)) = $0 { true } else { false } }, "\(result)")
    }
}
