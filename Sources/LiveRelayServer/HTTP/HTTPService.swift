import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The relay's HTTP server: the router on HummingbirdCore's server, run as one service of the relay's group.
///
/// It does what `Hummingbird.Application.run` does for a request, without the application's inner service group
/// and its Date-header service. That service iterates a timer merged with the graceful-shutdown sequence, and
/// AsyncAlgorithms' `merge` holds a lock across a continuation it may resume on another thread
/// (apple/swift-async-algorithms#430, #444): at shutdown both of the process's executor threads blocked on that lock
/// and SIGTERM hung (seen once in ten loaded fault-suite runs, thread stacks in the relay's log).
enum HTTPService {
    struct Settings: Sendable {
        var host: String
        var port: Int
        var idleTimeout: TimeAmount
        var serverName: String
    }

    static func make(
        router: Router<BasicRequestContext>, settings: Settings, logger: Logger,
        onServerRunning: @escaping @Sendable (any Channel) async -> Void
    ) throws -> any Service {
        let responder = router.buildResponder()
        let dates = HTTPDate()
        let serverName = settings.serverName
        return try HTTPServerBuilder.http1(configuration: .init(idleTimeout: settings.idleTimeout)).buildServer(
            configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: serverName),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger,
            responder: { request, writer, channel in
                let context = BasicRequestContext(source: .init(channel: channel, logger: logger))
                var response: Response
                do {
                    response = try await responder.respond(to: request, context: context)
                } catch let error as HTTPParserError {
                    throw error
                } catch {
                    // The error middleware answers every error; anything past it is a bug, answered without detail.
                    logger.error("unhandled error", metadata: ["error": "\(String(describing: type(of: error)))"])
                    response = Response(status: .internalServerError)
                }
                response.headers[.date] = dates.now()
                response.headers[.server] = serverName
                try await writer.write(response: response.head, body: response.body)
            },
            onServerRunning: onServerRunning)
    }
}

/// The `Date` header value, formatted at most once a second.
final class HTTPDate: Sendable {
    private struct Cached {
        var second: Int = -1
        var text = ""
    }
    private let cached = Mutex(Cached())

    func now() -> String {
        let date = Date()
        let second = Int(date.timeIntervalSince1970)
        return cached.withLock { cached in
            if cached.second != second {
                cached.second = second
                cached.text = Self.format(date)
            }
            return cached.text
        }
    }

    /// RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(weekdays[(parts.weekday ?? 1) - 1]), \(two(parts.day)) \(months[(parts.month ?? 1) - 1]) "
            + "\(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }
}
