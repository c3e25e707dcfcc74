/// What a delivery worker does after a batch that neither filled nor left work behind, while the relay reads the
/// write-ahead log for commits (`WakeupGate.walFollowUp`).
public enum WALFollowUp: Equatable, Sendable {
    /// Claims again at once: a commit came while every worker was busy, and no doorbell was rung for it.
    case now
    /// Claims once more shortly (the how-manieth time it looks again, from 0): it was rung for a commit its claim did
    /// not find. The log shows a commit as soon as it is flushed, a moment before other sessions see it, so a claim
    /// made at once can miss it.
    case soon(Int)
    /// Waits for its doorbell, idle from this step on (in the same step, so that the next commit rings it).
    case wait

    /// How long a worker waits before each look again (`soon`). The first is at once: the empty claim's own
    /// `COMMIT AND CHAIN` is the moment the writer's backend needs to finish its commit, and in B1 that look found
    /// nearly every commit the first claim had missed (about 1 write in 100), where waiting 2 ms set B1's p99. The
    /// later looks cover a machine loaded enough that a commit is flushed tens of milliseconds before others see it
    /// (docs/latency.md, "The commit the log shows early").
    /// nil: at once.
    static let lateLookDelays: [Duration?] = [nil, .milliseconds(2), .milliseconds(6), .milliseconds(18),
                                              .milliseconds(54), .milliseconds(162)]

    /// How long the worker waits for its doorbell before it claims again (nil: at once); `poll` when it waits idle.
    public func pause(poll: Duration) -> Duration? {
        switch self {
        case .now: nil
        case let .soon(look): Self.lateLookDelays[min(look, Self.lateLookDelays.count - 1)]
        case .wait: poll
        }
    }
}
