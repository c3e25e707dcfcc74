import LiveRelayPostgres
import Testing

@Suite("Doorbell", .timeLimit(.minutes(1)))
struct DoorbellTests {
    @Test("a ring while nobody waits is kept for the next wait")
    func keptRing() async {
        let bell = Doorbell()
        bell.ring()
        let clock = ContinuousClock()
        // The timeout is twice the bound, so only the kept ring can end the wait in time.
        let elapsed = await clock.measure { await bell.wait(timeout: .seconds(120)) }
        #expect(elapsed < .seconds(60), "the suite runs beside busy tests, so no tighter bound")
    }

    @Test("a wait ends at its timeout when nothing rings")
    func timeout() async {
        let bell = Doorbell()
        let clock = ContinuousClock()
        let elapsed = await clock.measure { await bell.wait(timeout: .milliseconds(100)) }
        #expect(elapsed >= .milliseconds(100))
        #expect(elapsed < .seconds(60), "the suite runs beside busy tests, so no tighter bound")
    }

    @Test("one ring ends one wait: the next wait runs to its timeout")
    func ringEndsOneWait() async {
        let bell = Doorbell()
        let clock = ContinuousClock()
        // Whether the ring comes before or during this wait, it ends it (kept or delivered) and is used up.
        async let first = clock.measure { await bell.wait(timeout: .seconds(120)) }
        bell.ring()
        #expect(await first < .seconds(60))
        let elapsed = await clock.measure { await bell.wait(timeout: .milliseconds(300)) }
        #expect(elapsed >= .milliseconds(300))
    }

    @Test("cancelling the waiting task ends the wait")
    func cancelled() async {
        let bell = Doorbell()
        let clock = ContinuousClock()
        let waiting = Task { await clock.measure { await bell.wait(timeout: .seconds(120)) } }
        waiting.cancel()
        #expect(await waiting.value < .seconds(60))
    }
}
