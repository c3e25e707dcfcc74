import Logging
import Synchronization

/// Whether a new connection to PostgreSQL can be made right now, asked of the server at most once a second however
/// many callers ask: one attempt in flight, which every caller that asks meanwhile waits for, and its answer kept for
/// a second. A request that has waited a while for the pool asks it (`RelayStore.diagnose`), so during an outage
/// every request would otherwise open a connection of its own.
///
/// The attempt runs in a task of its own, and a caller that is cancelled stops waiting at once (answered nil: nothing
/// known). So a request whose query finished meanwhile is neither held up by the attempt nor, by cancelling it, turns
/// a cancelled attempt's error into the answer every other caller gets.
public final class ConnectionProbe: Sendable {
    private typealias Waiter = CheckedContinuation<String?, Never>

    private struct State {
        var known: (problem: String?, at: ContinuousClock.Instant)?
        /// Callers waiting for the attempt in flight, by number; nil while none is in flight.
        var waiting: [Int: Waiter]?
        var callers = 0
    }

    private let attempt: @Sendable () async -> String?
    private let freshFor: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let state = Mutex(State())

    /// - Parameters:
    ///   - freshFor: how long an answer is kept.
    ///   - now: the clock (tests move it).
    ///   - attempt: one connection attempt: why it failed, or nil when it succeeded.
    public init(freshFor: Duration = .seconds(1), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
                attempt: @escaping @Sendable () async -> String?) {
        self.attempt = attempt
        self.freshFor = freshFor
        self.now = now
    }

    /// Probes `connector` (`DatabaseConnector.connectionProblem`).
    public convenience init(connector: DatabaseConnector, logger: Logger) {
        self.init { await connector.connectionProblem(logger: logger) }
    }

    /// Why no connection can be made ("cannot connect to PostgreSQL at db:5432: Connection refused"), or nil when one
    /// can (or when the caller is cancelled before the answer).
    public func problem() async -> String? {
        let caller = state.withLock { state in
            state.callers += 1
            return state.callers
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: Waiter) in
                let now = now()
                let answered: String?? = state.withLock { state in
                    if let known = state.known, now - known.at < freshFor { return .some(known.problem) }
                    if Task.isCancelled { return .some(nil) }
                    if state.waiting == nil {
                        state.waiting = [:]
                        startAttempt()
                    }
                    state.waiting?[caller] = waiter
                    return nil
                }
                if let answered { waiter.resume(returning: answered) }
            }
        } onCancel: {
            state.withLock { $0.waiting?.removeValue(forKey: caller) }?.resume(returning: nil)
        }
    }

    /// Runs the attempt; its answer is kept and given to every caller waiting for it. (Called with the lock held:
    /// the task takes it only once the attempt is done.)
    private func startAttempt() {
        Task { [attempt, now] in
            let problem = await attempt()
            let answeredAt = now()
            let waiting = state.withLock { state in
                defer {
                    state.known = (problem, answeredAt)
                    state.waiting = nil
                }
                return state.waiting ?? [:]
            }
            for waiter in waiting.values { waiter.resume(returning: problem) }
        }
    }

    /// Callers waiting for the attempt in flight (for tests).
    var waiting: Int {
        state.withLock { $0.waiting?.count ?? 0 }
    }
}
