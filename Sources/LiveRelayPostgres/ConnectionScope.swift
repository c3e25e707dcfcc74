import NIOCore
import PostgresNIO
import Synchronization

/// Runs work on a long-lived connection so that it ends when the connection closes or a deadline passes.
///
/// PostgresNIO never completes a query written to a connection that has just closed (for example when PostgreSQL
/// restarts), and such a query ignores cancellation. So the work runs in a task of its own that is abandoned, not
/// awaited, once the connection's `closeFuture` fires or the deadline passes; the caller gets an error at once
/// and reconnects. These are the relay's only unstructured tasks, and they exist only for that reason.
public enum ConnectionScope {
    /// The connection closed while the work was running.
    public struct ConnectionClosed: Error, CustomStringConvertible {
        public init() {}
        public var description: String { "the database connection closed" }
    }

    public static func run<Result: Sendable>(
        on connection: PostgresConnection, deadline: Duration?, what: String,
        _ work: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let race = Race<Result>()
        defer { race.cancelTasks() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
                race.start(continuation)
                race.add(Task {
                    do { race.finish(.success(try await work())) } catch { race.finish(.failure(error)) }
                })
                if let deadline {
                    race.add(Task {
                        guard (try? await Task.sleep(for: deadline)) != nil else { return }
                        race.finish(.failure(DeadlineExceeded(what: what)))
                        let _: EventLoopFuture<Void> = connection.close()
                    })
                }
                connection.closeFuture.whenComplete { _ in race.finish(.failure(ConnectionClosed())) }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
            let _: EventLoopFuture<Void> = connection.close()
        }
    }
}

/// The first of several outcomes wins; the others are dropped.
private final class Race<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var finished: Result<Value, any Error>?
        var tasks: [Task<Void, Never>] = []
    }
    private let state = Mutex(State())

    func start(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            if let finished = state.finished { return finished }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    func finish(_ result: Result<Value, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<Value, any Error>? in
            guard state.finished == nil else { return nil }
            state.finished = result
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }

    func add(_ task: Task<Void, Never>) {
        state.withLock { $0.tasks.append(task) }
    }

    func cancelTasks() {
        for task in state.withLock({ $0.tasks }) { task.cancel() }
    }
}
