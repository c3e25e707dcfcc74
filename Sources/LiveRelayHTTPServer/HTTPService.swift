import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import UnixSignals

/// An HTTP server for a Hummingbird router, run as one service of the caller's service group (the relay's, the
/// simulator's).
///
/// It answers a request as `Hummingbird.Application` does, without the application's inner service group and its
/// Date-header service. That service iterates a timer merged with the graceful-shutdown sequence, and AsyncAlgorithms'
/// `merge` holds a lock across a continuation it may resume on another thread (apple/swift-async-algorithms#430,
/// #444): at shutdown both of the process's executor threads blocked on that lock and SIGTERM hung (seen once in ten
/// loaded fault-suite runs, with the thread stacks in the relay's log).
public struct HTTPService: Service {
    private let server: any Service

    /// - Parameters:
    ///   - server: `.http1(...)`, or `.http2Upgrade(...)` for TLS with HTTP/2.
    ///   - onServerRunning: called with the listening channel (its local address has the port).
    public init<Context: RequestContext>(
        router: Router<Context>, server: HTTPServerBuilder, address: BindAddress, serverName: String, logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void
    ) throws where Context.Source == ApplicationRequestContextSource {
        let responder = router.buildResponder()
        let dates = HTTPDate()
        self.server = try server.buildServer(
            configuration: .init(address: address, serverName: serverName),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger,
            responder: { request, writer, channel in
                let context = Context(source: .init(channel: channel, logger: logger))
                var response: Response
                do {
                    response = try await responder.respond(to: request, context: context)
                } catch let error as HTTPParserError {
                    throw error
                } catch {
                    // Routers answer their errors; anything past them is a bug, answered without detail.
                    logger.error("unhandled error", metadata: ["error": "\(String(describing: type(of: error)))"])
                    response = Response(status: .internalServerError)
                }
                response.headers[.date] = dates.now()
                response.headers[.server] = serverName
                try await writer.write(response: response.head, body: response.body)
            },
            onServerRunning: onServerRunning)
    }

    public func run() async throws {
        try await server.run()
    }

    /// Runs the server alone in a service group that shuts down gracefully on the given signals.
    public func runService(gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint], logger: Logger) async throws {
        try await ServiceGroup(configuration: .init(
            services: [self], gracefulShutdownSignals: gracefulShutdownSignals, logger: logger)).run()
    }
}

