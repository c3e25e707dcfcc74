import Logging
import Synchronization

/// Whether a new connection to PostgreSQL can be made right now, asked of the server at most once a second however
/// many callers ask: one attempt in flight, which every caller that asks meanwhile waits for, and its answer kept for
/// a second. A request that has waited a while for the pool asks it (`RelayStore.diagnose`), so during an outage
/// every request would otherwise open a connection of its own.
public final class ConnectionProbe: Sendable {
    private enum State {
        case idle
        case probing(waiting: [CheckedContinuation<String?, Never>])
        case known(problem: String?, at: ContinuousClock.Instant)
    }

    private let attempt: @Sendable () async -> String?
    private let freshFor: Duration
    private let state = Mutex(State.idle)

    /// - Parameter attempt: one connection attempt: why it failed, or nil when it succeeded.
    public init(freshFor: Duration = .seconds(1), attempt: @escaping @Sendable () async -> String?) {
        self.attempt = attempt
        self.freshFor = freshFor
    }

    /// Probes `connector` (`DatabaseConnector.connectionProblem`).
    public convenience init(connector: DatabaseConnector, logger: Logger) {
        self.init { await connector.connectionProblem(logger: logger) }
    }

    /// Why no connection can be made ("cannot connect to PostgreSQL at db:5432: Connection refused"), or nil when one
    /// can.
    public func problem() async -> String? {
        enum Step { case answer(String?), probe, wait }
        let freshFor = self.freshFor
        let step: Step = state.withLock { state in
            switch state {
            case .known(let problem, let at) where ContinuousClock.now - at < freshFor: return .answer(problem)
            case .probing: return .wait
            case .idle, .known:
                state = .probing(waiting: [])
                return .probe
            }
        }
        switch step {
        case .answer(let problem):
            return problem
        case .wait:
            return await withCheckedContinuation { continuation in
                let answered: String?? = state.withLock { state in
                    switch state {
                    case .probing(var waiting):
                        waiting.append(continuation)
                        state = .probing(waiting: waiting)
                        return nil
                    case .known(let problem, _):
                        return .some(problem)
                    case .idle:
                        return .some(nil)
                    }
                }
                if let answered { continuation.resume(returning: answered) }
            }
        case .probe:
            // In a task of its own: the caller that happens to probe may be cancelled (its request finished another
            // way), and a cancelled attempt's error would be the answer every waiting caller got.
            let attempt = self.attempt
            let problem = await Task { await attempt() }.value
            let waiting: [CheckedContinuation<String?, Never>] = state.withLock { state in
                defer { state = .known(problem: problem, at: .now) }
                if case .probing(let waiting) = state { return waiting }
                return []
            }
            for continuation in waiting { continuation.resume(returning: problem) }
            return problem
        }
    }

    /// Callers waiting for the attempt in flight (for tests).
    var waiting: Int {
        state.withLock { state in
            if case .probing(let waiting) = state { return waiting.count }
            return 0
        }
    }
}
