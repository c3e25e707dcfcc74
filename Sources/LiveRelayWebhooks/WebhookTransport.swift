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

    private let clients: WebhookClients
    /// The checks running now, by URL, and how many callers wait for one.
    private let lookups = Mutex<(running: [String: Task<WebhookURLGuard.Target, Never>], waiting: Int)>(([:], 0))
    private let guardrail: WebhookURLGuard
    /// Whether requests go to the addresses the check allowed (`WebhookClients`). With private networks allowed every
    /// address is, so nothing is pinned: the client resolves each name itself and tries all of its addresses (a dev
    /// receiver on `localhost` that listens on IPv4 alone is reached at once).
    private let pinning: Bool

    public convenience init(allowPrivate: Bool) {
        self.init(guardrail: WebhookURLGuard(allowPrivate: allowPrivate), pinning: !allowPrivate)
    }

    init(guardrail: WebhookURLGuard, pinning: Bool) {
        self.guardrail = guardrail
        self.pinning = pinning
        self.clients = WebhookClients(configuration: Self.configuration)
    }

    private static var configuration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        // The deadline given with each request ends when the answer's head arrives; the read timeout bounds the rest.
        configuration.timeout = .init(connect: .seconds(5), read: Self.deadline)
        // Many events in flight to one receiver at once (each activity's events go in order, activities in parallel):
        // as many connections as the webhook workers have lanes.
        configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 32)
        // A connection refused fails its request at once, to be retried by the worker's backoff (0.5 s, doubling),
        // rather than held while the pool tries again until the connect timeout: a receiver that is down cost each
        // attempt 5 s of a lane, and its log row said "next attempt in 390 ms" 5 s after the attempt began.
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.decompression = .disabled
        return configuration
    }

    /// Checks the URL's host now, and points its client at an address this check allowed.
    public func refusal(of url: String) async -> String? {
        guard pinning else { return await guardrail.refusal(of: url) }
        if case .failure(let refused) = await checkAndPin(url) { return refused.reason }
        return nil
    }

    /// The client that sends to the URL: its host's, checked already by `refusal(of:)` or now.
    private func checkedClient(for url: String) async -> Result<HTTPClient, Refused> {
        guard pinning else {
            if let reason = await guardrail.refusal(of: url) { return .failure(Refused(reason: reason)) }
            return .success(clients.unpinned())
        }
        if let host = WebhookURLGuard.host(of: url).name, let client = clients.pinned(host: host) {
            return .success(client)
        }
        return await checkAndPin(url)
    }

    /// Looks the URL's host up and checks it; its client is then pinned to an address the check allowed.
    private func checkAndPin(_ url: String) async -> Result<HTTPClient, Refused> {
        switch await lookUp(url) {
        case .refused(let reason): .failure(Refused(reason: reason))
        case .allowed(let host, let addresses): .success(clients.client(host: host, addresses: addresses))
        }
    }

    /// The guard's check of the URL, shared by every caller that asks while it runs: however many lanes and workers
    /// want a host that resolves slowly, it is looked up once at a time (each lookup holds a thread of NIO's blocking
    /// pool, which other endpoints' lookups need too).
    private func lookUp(_ url: String) async -> WebhookURLGuard.Target {
        let lookup = lookups.withLock { lookups in
            lookups.waiting += 1
            if let lookup = lookups.running[url] { return lookup }
            let lookup = Task {
                let target = await self.guardrail.target(of: url)
                self.lookups.withLock { $0.running[url] = nil }
                return target
            }
            lookups.running[url] = lookup
            return lookup
        }
        let target = await lookup.value
        lookups.withLock { $0.waiting -= 1 }
        return target
    }

    /// How many callers wait for a check now (for tests).
    var lookupsWaiting: Int { lookups.withLock { $0.waiting } }

    struct Refused: Error {
        var reason: String
    }

    public func send(_ webhook: WebhookRequest) async -> WebhookResult {
        let client: HTTPClient
        switch await checkedClient(for: webhook.url) {
        case .success(let found): client = found
        case .failure(let refused): return WebhookResult(delivered: false, error: "not sent: \(refused.reason)")
        }
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
            if pinning, Self.isConnectionFailure(error), let host = WebhookURLGuard.host(of: webhook.url).name {
                clients.connectionFailed(host: host)
            }
            return WebhookResult(delivered: false, error: "no answer: \(Self.describe(error))")
        }
    }

    public func shutdown() async {
        await clients.shutdown()
    }

    /// No connection could be made (the address may be down while the host's others are not).
    static func isConnectionFailure(_ error: any Error) -> Bool {
        if let error = error as? HTTPClientError { return error == .connectTimeout }
        return error is NIOConnectionError || error is IOError
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
        // (What the connection pool throws when every attempt to connect failed: ECONNREFUSED and the like.)
        if let error = error as? IOError { return "connection failed: \(String(cString: strerror(error.errnoCode)))" }
        return String(describing: type(of: error))
    }
}
