/// When a woken webhook worker claims: at once if its previous claim began at least a window ago, else when that
/// window ends.
///
/// The window lets the events of a busy moment gather into one claim and one record (at 400 pushes/s, a claim per
/// delivery batch was a webhook transaction every few milliseconds, which cost the pushes' latency), so a worker claims
/// at most once a window while it is rung. Waiting out the window after every wake-up did the same but also held the
/// first event after a quiet spell for the whole window; pacing from the previous claim sends that one at once.
public enum ClaimPacing {
    /// How long to wait before claiming, given the time since the previous claim began (nil: there was none).
    public static func pause(sincePreviousClaim elapsed: Duration?, window: Duration) -> Duration {
        guard let elapsed, elapsed < window else { return .zero }
        return window - elapsed
    }
}
