import Logging
import ServiceLifecycle

/// Runs `service` (a simulator's server) while `body` runs, then stops it gracefully: it stops accepting connections
/// and lets those it has end, as `liverelay dev` stops its simulators. Cancelled instead, an HTTP/2 server traps the
/// whole test process (NIO's "Deinited NIOAsyncWriter without calling finish()") when a stream arrives on a connection
/// it accepted a moment before: a relay's client connecting as its test ends. A stopping server trapped CI once even
/// so, on a connection that a stopped relay's client had left to finish its handshake; `HTTP2Client.shutdown()` now
/// closes one still being made. Past `limit` it is cancelled after all.
func withGracefulService<T: Sendable>(
    _ service: some Service, logger: Logger, limit: Duration = .seconds(5), _ body: () async throws -> T
) async throws -> T {
    var configuration = ServiceGroupConfiguration(services: [service], gracefulShutdownSignals: [], logger: logger)
    configuration.maximumGracefulShutdownDuration = limit
    let group = ServiceGroup(configuration: configuration)
    return try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask { try await group.run() }
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        await group.triggerGracefulShutdown()
        try? await tasks.waitForAll()
        return try outcome.get()
    }
}
