import Testing
@testable import LiveRelayPostgres

/// The wake-up gate's decisions on their own, over the interleavings that lost writers before: no PostgreSQL, no
/// listener, no clock. Consumers: the stream hub (0) and two delivery workers (1, 2).
@Suite("Wake-up gate decisions")
struct WakeupGateDecisionTests {
    static let at = ContinuousClock.now

    static func gate() -> WakeupGate {
        var gate = WakeupGate()
        let stream = gate.register(sharesWork: false)
        let workers = [gate.register(sharesWork: true), gate.register(sharesWork: true)]
        #expect(stream == 0 && workers == [1, 2])
        return gate
    }

    @Test("a writer's wake-up rings the stream and one idle worker, which counts as busy until it reports idle")
    func wakeUpRingsOneWorker() {
        var gate = Self.gate()
        let first = gate.wakeUp(notified: true, at: Self.at)
        #expect(first == [0, 1] && gate.busy == [1])
        let second = gate.wakeUp(notified: true, at: Self.at)
        #expect(second == [0, 2], "the busy worker was rung again")
        let third = gate.wakeUp(notified: true, at: Self.at)
        #expect(third == [0], "every worker busy: only the stream looks")
    }

    @Test("the relay's own re-scan rings a worker without counting it busy")
    func rescanDoesNotCountBusy() {
        var gate = Self.gate()
        let rung = gate.wakeUp(notified: false, at: Self.at)
        #expect(rung == [0, 1] && gate.busy.isEmpty)
    }

    @Test("a re-scan that saw nothing due rings only the stream; a writer's wake-up always rings a worker")
    func rescanWithNothingDue() {
        var gate = Self.gate()
        let rescan = gate.wakeUp(notified: false, due: false, at: Self.at)
        #expect(rescan == [0] && gate.busy.isEmpty)
        let notified = gate.wakeUp(notified: true, due: false, at: Self.at)
        #expect(notified == [0, 1] && gate.busy == [1])
    }

    @Test("after a writer's wake-up the row already says busy: a worker finding work writes nothing")
    func busyAfterWakeUpWritesNothing() {
        var gate = Self.gate()
        _ = gate.publish()
        _ = gate.wakeUp(notified: true, at: Self.at)
        #expect(!gate.publishedIdle)
        let rewrite = [gate.reportBusy(1), gate.reportBusy(2), gate.takeStale()]
        #expect(rewrite == [false, false, false])
    }

    @Test("busy, idle, woken: each change the row must show is flagged once, and the row follows the workers")
    func busyIdleWoken() {
        var gate = Self.gate()
        let idle = gate.publish()
        #expect(idle, "nothing busy: the row says idle")
        // Found work while the row said idle: rewrite it busy (once).
        let busy = [gate.reportBusy(1), gate.reportBusy(2), gate.takeStale(), gate.publish()]
        #expect(busy == [true, false, true, false])
        // The last worker to drain rewrites it idle.
        let drained = [gate.reportIdle(1), gate.reportIdle(2), gate.takeStale(), gate.publish()]
        #expect(drained == [false, true, true, true])
        // A writer wakes the relay: the woken worker is busy until it reports idle, and only then is the row idle.
        let rung = gate.wakeUp(notified: true, rows: [7], at: Self.at)
        #expect(rung == [0, 1])
        let woken = [gate.reportIdle(2), gate.reportIdle(1), gate.takeStale(), gate.publish()]
        #expect(woken == [false, true, true, true], "an idle worker's report published idle mid-batch")
    }

    @Test("a writer's notification that comes while the row is being written idle wins")
    func notificationDuringGateWrite() {
        var gate = Self.gate()
        let idle = gate.publish()  // the listener is writing idle…
        _ = gate.wakeUp(notified: true, at: Self.at)  // …and a writer found it idle and marked it busy meanwhile
        #expect(idle && !gate.publishedIdle && !gate.followsOpenWriters)
        let rewrite = gate.reportIdle(1)
        #expect(rewrite, "the woken worker's idle must be written again")
    }

    @Test("an idle write that finds a writer's mark made since leaves it: the relay is busy until the woken worker is")
    func idleWriteKeepsWritersMark() {
        var gate = Self.gate()
        _ = gate.publish()
        // The listener writes idle again (its refresh) while a writer finds the row idle and marks it busy: the
        // write waits for that writer's commit, finds the row no longer as the relay left it, and leaves it.
        let believed = gate.rowSaysIdle, idle = gate.publish()
        #expect(believed && idle)
        gate.markedBusyByWriter()
        #expect(!gate.rowSaysIdle && !gate.followsOpenWriters)
        // That writer's notification wakes a worker; when it has drained, the row is written idle again.
        let rung = gate.wakeUp(notified: true, at: Self.at)
        #expect(rung == [0, 1])
        #expect(gate.reportIdle(1) && gate.takeStale())
        #expect(!gate.rowSaysIdle, "idle is written over the writer's mark, which is what the relay believes now")
    }

    @Test("a late commit after idle: the open writers are followed only while the row says idle")
    func lateCommitAfterIdle() {
        var gate = Self.gate()
        #expect(!gate.followsOpenWriters, "nothing published yet")
        _ = gate.publish()
        #expect(gate.followsOpenWriters)
        _ = gate.wakeUp(notified: true, at: Self.at)
        #expect(!gate.followsOpenWriters, "woken: the relay looks until it finds nothing")
        _ = gate.reportIdle(1)
        _ = gate.publish()
        #expect(gate.followsOpenWriters)
    }

    @Test("an idle report while the row may say busy (after a reconnect) rewrites it")
    func idleWhileRowBusy() {
        var gate = Self.gate()
        let rewrite = gate.reportIdle(1)
        #expect(rewrite)
    }

    @Test("after a batch the stream looks; a full claim rings the other workers, never the stream or itself")
    func afterBatch() {
        let gate = Self.gate()
        #expect(gate.afterBatch() == [0])
        #expect(gate.othersThan(1) == [2] && gate.othersThan(2) == [1])
    }

    @Test("named rows are taken in order up to a limit, with when the first was named; at most 1,000 wait")
    func notifiedRows() {
        var gate = Self.gate()
        let first = ContinuousClock.now
        _ = gate.wakeUp(notified: true, rows: [1, 2, 3], at: first)
        _ = gate.wakeUp(notified: true, rows: [4], at: first + .seconds(1))
        let taken = gate.takeNotifiedRows(limit: 3), rest = gate.takeNotifiedRows(limit: 3)
        let none = gate.takeNotifiedRows(limit: 3)
        #expect(taken.rows == [1, 2, 3] && taken.since == first)
        #expect(rest.rows == [4] && rest.since == first)
        #expect(none.rows.isEmpty && none.since == nil)
        _ = gate.wakeUp(notified: true, rows: Array(1...1_500), at: first)
        let kept = gate.takeNotifiedRows(limit: 2_000)
        #expect(kept.rows == Array(501...1_500))
    }
}
