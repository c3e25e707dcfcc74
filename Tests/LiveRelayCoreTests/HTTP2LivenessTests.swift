import NIOCore
import Testing
@testable import LiveRelayHTTP2Client

/// When an idle connection checks with a PING that its server is still there, and when it gives up on it.
@Suite("HTTP/2 liveness")
struct HTTP2LivenessTests {
    static let start = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func at(_ seconds: Int64) -> NIODeadline { start + .seconds(seconds) }

    @Test("idle for its interval: a PING; a frame read meanwhile answers it, and the wait starts again")
    func pingWhenIdle() {
        var liveness = HTTP2Liveness(idle: .seconds(60), answer: .seconds(10), now: Self.start)
        #expect(liveness.checkEvery == .seconds(10))
        #expect(liveness.check(at: Self.at(59), requestsOpen: false) == .wait)
        #expect(liveness.check(at: Self.at(60), requestsOpen: false) == .ping)
        #expect(liveness.check(at: Self.at(65), requestsOpen: false) == .wait, "one PING at a time")
        liveness.read(at: Self.at(66))
        #expect(liveness.pingSent == nil)
        #expect(liveness.check(at: Self.at(80), requestsOpen: false) == .wait)
        #expect(liveness.check(at: Self.at(126), requestsOpen: false) == .ping)
    }

    @Test("a PING unanswered for its answer limit: dead")
    func unansweredPing() {
        var liveness = HTTP2Liveness(idle: .seconds(60), answer: .seconds(10), now: Self.start)
        #expect(liveness.check(at: Self.at(61), requestsOpen: false) == .ping)
        #expect(liveness.check(at: Self.at(70), requestsOpen: false) == .wait)
        #expect(liveness.check(at: Self.at(71), requestsOpen: false) == .dead)
    }

    @Test("requests in flight are the batch's to watch: no PING while one is open, however long the silence")
    func noPingWithRequestsOpen() {
        var liveness = HTTP2Liveness(idle: .seconds(60), answer: .seconds(10), now: Self.start)
        #expect(liveness.check(at: Self.at(300), requestsOpen: true) == .wait)
        #expect(liveness.check(at: Self.at(301), requestsOpen: false) == .ping)
        // A batch that starts after the PING went out does not save a connection that never answers it.
        #expect(liveness.check(at: Self.at(311), requestsOpen: true) == .dead)
    }
}
