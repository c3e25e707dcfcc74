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
        let watch = CloseWatch.of(connection)
        let watchID = watch.add { race.finish(.failure(ConnectionClosed())) }
        defer {
            watch.remove(watchID)
            race.cancelTasks()
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
                race.start(continuation)
                race.add(Task {
                    do { race.finish(.success(try await work())) } catch { race.finish(.failure(error)) }
                })
                if let deadline {
                    // A timer, not a sleeping task: it is freed when cancelled (see Doorbell).
                    race.setTimer(connection.eventLoop.scheduleTask(in: TimeAmount(deadline)) {
                        race.finish(.failure(DeadlineExceeded(what: what)))
                        let _: EventLoopFuture<Void> = connection.close()
                    })
                }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
            let _: EventLoopFuture<Void> = connection.close()
        }
    }
}

/// Calls back whoever is running on a connection when it closes. One per open connection, registered on its
/// `closeFuture` once: a callback added to the future per run would stay there (with everything it captures)
/// until the connection closes, which for the relay's long-lived connections is a leak of every batch.
private final class CloseWatch: Sendable {
    private struct State {
        var closed = false
        var next = 0
        var callbacks: [Int: @Sendable () -> Void] = [:]
    }
    private let state = Mutex(State())
    /// Held until the close is seen, so that its identifier cannot be reused by a new connection meanwhile.
    private let connection: PostgresConnection
    private static let open = Mutex<[ObjectIdentifier: CloseWatch]>([:])

    private init(_ connection: PostgresConnection) { self.connection = connection }

    static func of(_ connection: PostgresConnection) -> CloseWatch {
        let key = ObjectIdentifier(connection)
        let (watch, isNew) = open.withLock { watches -> (CloseWatch, Bool) in
            if let watch = watches[key] { return (watch, false) }
            let watch = CloseWatch(connection)
            watches[key] = watch
            return (watch, true)
        }
        if isNew {
            connection.closeFuture.whenComplete { _ in
                open.withLock { watches in
                    if watches[key] === watch { watches[key] = nil }
                }
                watch.fire()
            }
        }
        return watch
    }

    /// Registers a callback; it runs at once when the connection has already closed.
    func add(_ callback: @escaping @Sendable () -> Void) -> Int {
        let (id, closed) = state.withLock { state -> (Int, Bool) in
            state.next += 1
            if !state.closed { state.callbacks[state.next] = callback }
            return (state.next, state.closed)
        }
        if closed { callback() }
        return id
    }

    func remove(_ id: Int) {
        _ = state.withLock { $0.callbacks.removeValue(forKey: id) }
    }

    private func fire() {
        let callbacks = state.withLock { state -> [@Sendable () -> Void] in
            state.closed = true
            defer { state.callbacks = [:] }
            return Array(state.callbacks.values)
        }
        for callback in callbacks { callback() }
    }
}

/// The first of several outcomes wins; the others are dropped.
private final class Race<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, any Error>?
        var finished: Result<Value, any Error>?
        var tasks: [Task<Void, Never>] = []
        var timer: Scheduled<Void>?
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

    /// The deadline's timer; `cancelTasks` (when the run returns, always after this) cancels it.
    func setTimer(_ timer: Scheduled<Void>) {
        state.withLock { $0.timer = timer }
    }

    func cancelTasks() {
        let (tasks, timer) = state.withLock { ($0.tasks, $0.timer) }
        timer?.cancel()
        for task in tasks { task.cancel() }
    }
}
