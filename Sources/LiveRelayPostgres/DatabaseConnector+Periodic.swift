import Logging
import PostgresNIO
import ServiceLifecycle

extension DatabaseConnector {
    /// Runs `work` every `interval` (first after one interval: a relay starting has more urgent things to do) on one
    /// connection, reconnecting after a failure, until the task is cancelled or the service group shuts down.
    ///
    /// A run that takes longer than `deadline` closes the connection (a statement is not interrupted by cancellation:
    /// the scope closes the connection then, so the relay stops at once).
    public func runPeriodically(
        role: String, every interval: Duration, deadline: Duration, what: String, logger: Logger,
        _ work: @escaping @Sendable (PostgresConnection) async throws -> Void
    ) async {
        await cancelWhenGracefulShutdown {
            await self.runReconnecting(
                role: role, logger: logger, shouldStop: { Task.isCancelled || Task.isShuttingDownGracefully }
            ) { connection in
                while !Task.isCancelled {
                    try await Task.sleep(for: interval)
                    try await ConnectionScope.run(on: connection, deadline: deadline, what: what) {
                        try await work(connection)
                    }
                }
            }
        }
    }
}
