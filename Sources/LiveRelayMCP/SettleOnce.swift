import Synchronization

/// Two parties that race to end one wait (an MCP request's answer and its time limit): the first to call `settle()`
/// gets true and decides the outcome, every later call gets false. So an answer that comes just as the limit passes
/// is either sent whole, or the limit's 503 is, never a 503 after a good answer was taken.
final class SettleOnce: Sendable {
    private let settled = Atomic(false)

    init() {}

    /// True for the first call only.
    func settle() -> Bool {
        !settled.exchange(true, ordering: .acquiringAndReleasing)
    }
}
