import AsyncHTTPClient
import Foundation
import LiveRelayCore
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// POSTs lifecycle events to webhook endpoints (README "Activity lifecycle"): signed, never following a
/// redirect, a 10 s deadline per request, at most 64 KiB of an answer read.
public final class WebhookTransport: WebhookSender {
    /// The longest a receiver may take to answer.
    public static let deadline = TimeAmount.seconds(10)
    /// The most of an answer read (the status is what counts).
    public static let maximumAnswerBytes = 64 * 1024

    /// Made at the first request: a relay without webhooks never opens one (nor has one to shut down).
    private let made = Mutex<(client: HTTPClient, group: MultiThreadedEventLoopGroup)?>(nil)
    private let guardrail: WebhookURLGuard

    public init(allowPrivate: Bool) {
        self.guardrail = WebhookURLGuard(allowPrivate: allowPrivate)
    }

    private var client: HTTPClient {
        made.withLock { made in
            if let made { return made.client }
            // Its own event loop thread: with Swift concurrency on the shared loops, requests made from a loop stay
            // on it, so without this every webhook connection would share one thread with the pushes.
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let client = Self.makeClient(on: group)
            made = (client, group)
            return client
        }
    }

    private static func makeClient(on group: MultiThreadedEventLoopGroup) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        // The deadline given with each request ends when the answer's head arrives; the read timeout bounds the rest.
        configuration.timeout = .init(connect: .seconds(5), read: Self.deadline)
        // Many events in flight to one receiver at once (each activity's events go in order, activities in parallel):
        // as many connections as the webhook workers have lanes.
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 32)
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
    }

    public func refusal(of url: String) async -> String? {
        await guardrail.refusal(of: url)
    }

    public func send(_ webhook: WebhookRequest) async -> WebhookResult {
        let body = Array(webhook.body.utf8)
        var request = HTTPClientRequest(url: webhook.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "LiveRelay-Webhooks/1")
        request.headers.add(name: WebhookSignature.eventIDHeaderName, value: webhook.eventID.uuidString.lowercased())
        request.headers.add(name: WebhookSignature.headerName, value: WebhookSignature.header(
            secret: webhook.secret, timestamp: Int64(Date().timeIntervalSince1970), body: body))
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, deadline: .now() + Self.deadline)
            var read = 0
            for try await chunk in response.body {
                read += chunk.readableBytes
                if read > Self.maximumAnswerBytes { break }
            }
            let status = Int(response.status.code)
            guard (200..<300).contains(status) else {
                let retryAfter = response.headers.first(name: "Retry-After").flatMap(Double.init)
                return WebhookResult(delivered: false, httpStatus: status,
                                     error: "the receiver answered \(status)", retryAfterSeconds: retryAfter)
            }
            return WebhookResult(delivered: true, httpStatus: status)
        } catch {
            return WebhookResult(delivered: false, error: "no answer: \(Self.describe(error))")
        }
    }

    public func shutdown() async {
        let made = self.made.withLock { made in
            defer { made = nil }
            return made
        }
        try? await made?.client.shutdown()
        try? await made?.group.shutdownGracefully()
    }

    /// A short description of a request failure, without the URL's query (which may hold a token).
    static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout: return "no answer within 10 s"
            case .connectTimeout: return "connection timed out"
            case .remoteConnectionClosed: return "the receiver closed the connection"
            default: return "\(error)"
            }
        }
        if error is NIOConnectionError { return "connection refused or unreachable" }
        return String(describing: type(of: error))
    }
}
