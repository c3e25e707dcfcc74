import Foundation
import HTTPTypes
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
        let answer = Answer(responder: router.buildResponder(), serverName: serverName, logger: logger)
        try self.init(answer: answer, server: server, address: address, onServerRunning: onServerRunning)
    }

    private init<Responder: HTTPResponder>(
        answer: Answer<Responder>, server: HTTPServerBuilder, address: BindAddress,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void
    ) throws where Responder.Context.Source == ApplicationRequestContextSource {
        let serverName = answer.serverName, logger = answer.logger
        self.server = try server.buildServer(
            configuration: .init(address: address, serverName: serverName),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger,
            responder: { request, writer, channel in
                let response = try await answer.response(to: request, channel: channel)
                try await writer.write(response: response.head, body: response.body)
            },
            onServerRunning: onServerRunning)
    }

    /// Plain HTTP/1.1, where a connection whose first request is a `GET` of one of `detachedPaths` is answered
    /// without a task of its own (`StreamingHTTP1Channel`): its response body may keep the connection by detaching
    /// (`DetachableBodyWriter`).
    public init<Context: RequestContext>(
        router: Router<Context>, http1 configuration: HTTP1Channel.Configuration, detachedPaths: Set<String>,
        address: BindAddress, serverName: String, logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void
    ) throws where Context.Source == ApplicationRequestContextSource {
        let answer = Answer(responder: router.buildResponder(), serverName: serverName, logger: logger)
        let builder = HTTPServerBuilder { responder in
            StreamingHTTP1Channel(
                responder: responder, configuration: configuration, detachedPaths: detachedPaths,
                answer: { head, connection in await answer.detached(head, connection: connection) })
        }
        try self.init(answer: answer, server: builder, address: address, onServerRunning: onServerRunning)
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

/// How the server answers a request: the router's response, with the Date and Server headers.
private struct Answer<Responder: HTTPResponder>: Sendable
where Responder.Context: RequestContext, Responder.Context.Source == ApplicationRequestContextSource {
    let responder: Responder
    let serverName: String
    let logger: Logger
    let dates = HTTPDate()

    func response(to request: Request, channel: any Channel) async throws -> Response {
        let context = Responder.Context(source: .init(channel: channel, logger: logger))
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
        return response
    }

    /// Answers the one request of a detached connection. A body that detaches keeps the connection; any other
    /// response is written whole and the connection closed.
    func detached(_ head: HTTPRequest, connection: DetachedConnection) async {
        let request = Request(head: head, body: .init(buffer: ByteBuffer()))
        guard var response = try? await response(to: request, channel: connection.channel) else {
            connection.channel.close(promise: nil)
            return
        }
        connection.setHead(response.head)
        let writer = DetachableBodyWriter(connection: connection)
        do {
            try await response.body.write(writer)
        } catch {
            logger.debug("a detached response's body failed", metadata: ["error": "\(error)"])
        }
        guard !connection.isDetached else { return }
        let body = writer.body
        response.headers[.connection] = "close"
        response.headers[.contentLength] = "\(body.readableBytes)"
        connection.writeWhole(response.head, body: body)
    }
}
