import Logging
import ServiceLifecycle

/// A service that says at debug level when it has stopped (which part holds a shutdown up).
struct TracedService: Service {
    let inner: any Service
    let logger: Logger

    func run() async throws {
        defer { logger.debug("service stopped", metadata: ["service": "\(type(of: inner))"]) }
        try await inner.run()
    }
}
