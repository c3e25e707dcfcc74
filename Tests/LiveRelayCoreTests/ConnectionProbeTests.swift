import Synchronization
import Testing
@testable import LiveRelayPostgres

/// The probe a waiting request asks whether PostgreSQL can be reached: one attempt for every caller that asks while it
/// runs, its answer kept for a while, then asked again.
@Suite("Connection probe", .timeLimit(.minutes(1)))
struct ConnectionProbeTests {
    /// An attempt that counts its calls and answers only when released.
    final class GatedAttempt: Sendable {
        let calls = Mutex(0)
        let release = AsyncStream.makeStream(of: String?.self)
        func run() async -> String? {
            calls.withLock { $0 += 1 }
            var answers = release.stream.makeAsyncIterator()
            let answer = await answers.next() ?? nil
            // What a real attempt gives when its task is cancelled: a failure that says nothing about the server.
            return Task.isCancelled ? "cancelled" : answer
        }
    }

    /// A clock the test moves.
    final class Clock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    @Test("callers that ask while an attempt runs share it; the answer is kept, then asked for again")
    func shared() async throws {
        let attempt = GatedAttempt()
        let clock = Clock()
        let probe = ConnectionProbe(freshFor: .seconds(1), now: { clock.now }) { await attempt.run() }
        let refused = "cannot connect to PostgreSQL at db:5432: Connection refused"
        try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<8 { group.addTask { await probe.problem() } }
            // All eight wait for the one attempt (polled on the probe's own count; the time limit ends a hung wait).
            while probe.waiting < 8 { try await Task.sleep(for: .milliseconds(1)) }
            attempt.release.continuation.yield(refused)
            for try await answer in group { #expect(answer == refused) }
        }
        #expect(attempt.calls.withLock { $0 } == 1)
        #expect(await probe.problem() == refused, "kept")
        #expect(attempt.calls.withLock { $0 } == 1)
        clock.advance(.milliseconds(999))
        #expect(await probe.problem() == refused, "still kept")
        clock.advance(.milliseconds(1))
        attempt.release.continuation.yield(nil)
        #expect(await probe.problem() == nil, "asked again once the answer is stale: reachable now")
        #expect(attempt.calls.withLock { $0 } == 2)
    }

    @Test("a cancelled caller stops waiting at once; the attempt goes on, unaffected, for the others")
    func cancelledCaller() async throws {
        let attempt = GatedAttempt()
        let probe = ConnectionProbe(freshFor: .seconds(60)) { await attempt.run() }
        let first = Task { await probe.problem() }
        while attempt.calls.withLock({ $0 }) < 1 { try await Task.sleep(for: .milliseconds(1)) }
        let second = Task { await probe.problem() }
        while probe.waiting < 2 { try await Task.sleep(for: .milliseconds(1)) }
        first.cancel()
        // Answered before the attempt ends: a request whose query finished is not held up by the probe.
        #expect(await first.value == nil)
        #expect(probe.waiting == 1)
        attempt.release.continuation.yield("refused")
        #expect(await second.value == "refused", "the attempt was cancelled with the first caller")
        #expect(attempt.calls.withLock { $0 } == 1)
    }
}
