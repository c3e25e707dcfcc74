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
}
