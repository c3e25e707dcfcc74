import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore
import LiveRelayHTTPServer
import Logging
import ServiceLifecycle
import Synchronization

/// A webhook endpoint for tests: records every request (headers and raw body) and answers what `answer` says.
final class WebhookReceiver: Sendable {
    struct Received: Sendable {
        var eventID: String
        var signature: String
        var body: [UInt8]
        /// The request's `Host` (its authority).
        var host = ""
        var json: JSONValue { (try? JSONValue(parsing: String(decoding: body, as: UTF8.self))) ?? .null }
        var type: String? { if case .string(let type)? = json.objectValue?["type"] { type } else { nil } }
        var activityID: String? {
            if case .string(let id)? = json.objectValue?["data"]?.objectValue?["activity"]?.objectValue?["id"] {
                return id
            }
            return nil
        }
    }

    private struct State {
        var received: [Received] = []
        var failuresLeft = 0
        var holding = false
        var stallingBodies = false
        var inFlight = 0
        var mostInFlight = 0
    }

    private let state = Mutex(State())

    /// The next `count` requests are answered 503.
    func fail(next count: Int) { state.withLock { $0.failuresLeft = count } }

    /// Requests are recorded but not answered until `release()` (a receiver that hangs).
    func hold() { state.withLock { $0.holding = true } }
    func release() { state.withLock { $0.holding = false } }

    /// Answers 200 at once, then sends one byte of a longer body and nothing more.
    func stallBodies() { state.withLock { $0.stallingBodies = true } }

    var received: [Received] { state.withLock { $0.received } }
    /// The most requests that were waiting for their answer at once.
    var mostInFlight: Int { state.withLock { $0.mostInFlight } }

    /// Runs the receiver on a free loopback port while `body` runs with its URL.
    func run(_ body: @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("hook") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let item = Received(
                eventID: request.headers[HTTPField.Name("LiveRelay-Event-Id")!] ?? "",
                signature: request.headers[HTTPField.Name("LiveRelay-Signature")!] ?? "",
                body: Array(buffer: bytes), host: request.head.authority ?? "")
            let (failing, held) = self.state.withLock { state -> (Bool, Bool) in
                state.received.append(item)
                if state.holding {
                    state.inFlight += 1
                    state.mostInFlight = max(state.mostInFlight, state.inFlight)
                }
                guard state.failuresLeft > 0 else { return (false, state.holding) }
                state.failuresLeft -= 1
                return (true, state.holding)
            }
            if held {
                while self.state.withLock({ $0.holding }) { try await Task.sleep(for: .milliseconds(10)) }
                self.state.withLock { $0.inFlight -= 1 }
            }
            if self.state.withLock({ $0.stallingBodies }) {
                return Response(status: .ok, headers: [.contentLength: "100"], body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: "{"))
                    try await Task.sleep(for: .seconds(60))
                })
            }
            return Response(status: failing ? .serviceUnavailable : .noContent)
        }
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        // Quiet: a test ends the receiver by cancelling it, requests it holds open included, which Hummingbird logs
        // as an error of each one (noise in the suite's output, not the relay's).
        var logger = Logger(label: "receiver")
        logger.logLevel = .critical
        let service = try HTTPService(
            router: router, server: .http1(), address: .hostname("127.0.0.1", port: 0), serverName: "receiver",
            logger: logger
        ) { channel in
            sink.yield(channel.localAddress?.port ?? 0)
            sink.finish()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await service.run() }
            var port = 0
            for await value in ports { port = value }
            defer { group.cancelAll() }
            try await body("http://127.0.0.1:\(port)/hook")
        }
    }

    /// Waits until `condition` holds for what was received.
    func wait(timeout: Duration = .seconds(20), _ condition: ([Received]) -> Bool) async throws -> [Received] {
        try await waitUntil(timeout: timeout) { condition(received) }
        return received
    }

    /// Waits until at least `count` requests have been held unanswered at once (`hold()`).
    func waitForInFlight(atLeast count: Int, timeout: Duration = .seconds(20)) async throws {
        try await waitUntil(timeout: timeout) { mostInFlight >= count }
    }

    private func waitUntil(timeout: Duration, _ condition: () -> Bool) async throws {
        if try await pollUntil(timeout: timeout, every: .milliseconds(25), condition) { return }
        struct TimedOut: Error, CustomStringConvertible {
            var seen: [String]
            var mostInFlight: Int
            var description: String {
                "timed out waiting for webhooks; received \(seen), at most \(mostInFlight) in flight at once"
            }
        }
        throw TimedOut(seen: received.compactMap(\.type), mostInFlight: mostInFlight)
    }
}
