import Testing
@testable import LiveRelayPostgres

/// The wake-up gate while the relay reads the write-ahead log for commits (`WALWatcher`): its row says busy, writers
/// never notify, and the log's commits ring the workers. Consumers: the stream hub (0) and two delivery workers (1, 2).
@Suite("Wake-up gate with the write-ahead log")
struct WakeupGateWALTests {
    static let at = ContinuousClock.now

    static func gate() -> WakeupGate {
        var gate = WakeupDecisionFixture.gate()
        let started = [gate.watchWAL(true), gate.takeStale()]
        #expect(started == [true, true], "starting to read the log rewrites the row")
        return gate
    }

    @Test("the row says busy whatever the workers do, and their busy and idle are never written")
    func rowSaysBusy() {
        var gate = Self.gate()
        let says = [gate.publish(), gate.reportBusy(1), gate.reportIdle(1), gate.takeStale(), gate.watchWAL(true)]
        #expect(says == [false, false, false, false, false], "busy, nothing to write, already reading")
        // The log is lost: the row is written again, idle since no worker is busy (writers notify again).
        let lost = [gate.watchWAL(false), gate.takeStale(), gate.publish()]
        #expect(lost == [true, true, true])
    }

    @Test("an outbox commit rings the stream and one idle worker, counted busy; a stream event alone, the stream")
    func commitsRing() {
        var gate = Self.gate()
        let stream = gate.walCommitted(outbox: false, at: Self.at)
        #expect(stream == [0] && gate.busy.isEmpty)
        let first = gate.walCommitted(outbox: true, at: Self.at)
        #expect(first == [0, 1] && gate.busy == [1])
        let second = gate.walCommitted(outbox: true, at: Self.at)
        #expect(second == [0, 2] && gate.busy == [1, 2])
    }

    @Test("a worker whose claim missed the commit it was rung for looks again six times, at once first, then idle")
    func lateCommit() {
        var gate = Self.gate()
        _ = gate.walCommitted(outbox: true, at: Self.at)
        let looks = [1, 2, 4, 10, 28, 82, 244].map {
            gate.walFollowUp(1, claimed: false, at: Self.at + .milliseconds($0))
        }
        #expect(looks == [.soon(0), .soon(1), .soon(2), .soon(3), .soon(4), .soon(5), .wait], "six looks, then idle")
        let poll = Duration.milliseconds(500)
        let pauses = looks.map { $0?.pause(poll: poll) }
        #expect(pauses == [nil, .milliseconds(2), .milliseconds(6), .milliseconds(18), .milliseconds(54),
                           .milliseconds(162), poll], "the first look at once, the last one 242 ms after the commit")
        #expect(gate.busy.isEmpty, "idle in the same step")
        // A claim that found rows, or a follow-up long after the commit, waits at once.
        _ = gate.walCommitted(outbox: true, at: Self.at)
        let found = gate.walFollowUp(1, claimed: true, at: Self.at + .milliseconds(1))
        _ = gate.walCommitted(outbox: true, at: Self.at)
        let late = gate.walFollowUp(1, claimed: false, at: Self.at + .seconds(1))
        #expect(found == .wait && late == .wait)
    }

    @Test("a commit that finds every worker busy is claimed by the next worker to finish, at once")
    func commitWhileAllBusy() {
        var gate = Self.gate()
        _ = gate.walCommitted(outbox: true, at: Self.at)
        _ = gate.walCommitted(outbox: true, at: Self.at)
        let third = gate.walCommitted(outbox: true, at: Self.at)
        #expect(third == [0], "no worker to ring")
        let first = gate.walFollowUp(2, claimed: true, at: Self.at)
        let followUps = [first, gate.walFollowUp(2, claimed: true, at: Self.at)]
        #expect(followUps == [.now, .wait])
    }

    @Test("without the log, a worker follows the notifications' rules (no follow-up)")
    func notReading() {
        var gate = WakeupDecisionFixture.gate()
        let followUp = gate.walFollowUp(1, claimed: false, at: Self.at)
        #expect(followUp == nil)
    }
}

/// The gate the decision tests start from: the stream hub (0) and two delivery workers (1, 2).
enum WakeupDecisionFixture {
    static func gate() -> WakeupGate {
        var gate = WakeupGate()
        _ = gate.register(sharesWork: false)
        _ = gate.register(sharesWork: true)
        _ = gate.register(sharesWork: true)
        return gate
    }
}
