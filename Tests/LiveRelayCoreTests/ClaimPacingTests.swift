import LiveRelayCore
import Testing

/// A woken webhook worker claims at once after a quiet spell, and at most once a window while it is rung.
@Suite("Claim pacing")
struct ClaimPacingTests {
    let window = Duration.milliseconds(50)

    @Test("the first claim, and one a window or more after the previous, go at once")
    func atOnce() {
        #expect(ClaimPacing.pause(sincePreviousClaim: nil, window: window) == .zero)
        #expect(ClaimPacing.pause(sincePreviousClaim: .milliseconds(50), window: window) == .zero)
        #expect(ClaimPacing.pause(sincePreviousClaim: .seconds(5), window: window) == .zero)
    }

    @Test("a claim within the window waits for the rest of it")
    func restOfWindow() {
        #expect(ClaimPacing.pause(sincePreviousClaim: .zero, window: window) == .milliseconds(50))
        #expect(ClaimPacing.pause(sincePreviousClaim: .milliseconds(12), window: window) == .milliseconds(38))
    }

    @Test("no window: never a pause")
    func noWindow() {
        #expect(ClaimPacing.pause(sincePreviousClaim: .zero, window: .zero) == .zero)
    }
}
