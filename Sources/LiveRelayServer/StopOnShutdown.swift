import ServiceLifecycle

/// Runs an action the moment graceful shutdown begins. The service group stops its services one after another, last
/// first; placed last, this tells the delivery workers to take no new batch while the HTTP server is still draining,
/// so the two drains overlap instead of adding up.
struct StopOnShutdown: Service {
    let action: @Sendable () -> Void

    func run() async throws {
        try? await gracefulShutdown()
        action()
    }
}
