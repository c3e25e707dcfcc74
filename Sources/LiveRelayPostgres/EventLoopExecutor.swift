import NIOCore

/// Runs the jobs of the tasks that prefer it (`withTaskExecutorPreference`) on one event loop.
///
/// A part of the relay whose connections live on that loop then reads an answer, decides and writes the next request
/// on the thread that read it: a wake-up, its claim and its push cost no hop to the cooperative pool and back, which
/// on a loaded two-core machine is a thread woken (and waited for) per round trip.
public final class EventLoopExecutor: TaskExecutor {
    public let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }

    /// Runs `body` with its jobs (and its child tasks' jobs) on `eventLoop`, or as it is when there is none.
    public static func run<Result: Sendable>(
        on eventLoop: (any EventLoop)?, _ body: () async throws -> Result
    ) async rethrows -> Result {
        guard let eventLoop else { return try await body() }
        return try await withTaskExecutorPreference(EventLoopExecutor(eventLoop)) { try await body() }
    }
}
