import LiveRelayPostgres
import Testing

@Suite("Doorbell")
struct DoorbellTests {
    @Test("a ring while nobody waits is kept for the next wait")
    func keptRing() async {
        let bell = Doorbell()
        bell.ring()
        let clock = ContinuousClock()
        let elapsed = await clock.measure { await bell.wait(timeout: .seconds(10)) }
        #expect(elapsed < .seconds(5))
    }

    @Test("a wait ends at its timeout when nothing rings")
    func timeout() async {
        let bell = Doorbell()
        let clock = ContinuousClock()
        let elapsed = await clock.measure { await bell.wait(timeout: .milliseconds(100)) }
        #expect(elapsed >= .milliseconds(100))
        #expect(elapsed < .seconds(5))
    }

    @Test("the timer of a wait that a ring ended does not end the next wait")
    func earlierTimerIsGone() async throws {
        let bell = Doorbell()
        let clock = ContinuousClock()
        async let first: Void = bell.wait(timeout: .milliseconds(50))
        try await Task.sleep(for: .milliseconds(10))
        bell.ring()
        await first
        // The first wait's timer would have fired 40 ms into this one.
        let elapsed = await clock.measure { await bell.wait(timeout: .milliseconds(400)) }
        #expect(elapsed >= .milliseconds(400))
    }

    @Test("cancelling the waiting task ends the wait")
    func cancelled() async {
        let bell = Doorbell()
        let clock = ContinuousClock()
        let waiting = Task { await clock.measure { await bell.wait(timeout: .seconds(30)) } }
        waiting.cancel()
        #expect(await waiting.value < .seconds(5))
    }
}
