import AsyncHTTPClient
import NIOCore
import NIOPosix
import Synchronization

/// The webhook transport's HTTP clients, one per host name, each of which connects only to an address the guard
/// checked for that name (AsyncHTTPClient's `dnsOverride`, which keeps the name for `Host`, SNI and the certificate).
/// So a name that resolves somewhere else between the check and the connection (DNS rebinding) cannot carry a request
/// to an address the operator did not allow. A name keeps its address while later checks still return it (a
/// round-robin name does not churn connections) and it can be reached; when they no longer return it, or a connection
/// to it failed, a new client takes over with the next address the check returned, and the old one is shut down (a
/// request still on it fails, and is retried like any other). A host not asked for in `idleLimit` (an endpoint
/// deleted, or moved to another host) loses its client, so a long-running relay holds clients only for hosts in use.
final class WebhookClients: Sendable {
    private struct Pin {
        var address: String
        var client: HTTPClient
        /// A connection to the address failed: the next check moves on to another of the host's addresses.
        var unreachable = false
        var lastUsed: ContinuousClock.Instant
    }

    private struct State {
        /// Made at the first request: a relay without webhooks never starts its thread (nor has one to shut down).
        var group: MultiThreadedEventLoopGroup?
        var pins: [String: Pin] = [:]
        /// The client for every host when nothing is pinned (every address allowed).
        var unpinned: HTTPClient?
        /// Clients being shut down, by a number of their own; each removes itself when done.
        var retiring: [Int: Task<Void, Never>] = [:]
        var retired = 0
        var swept: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let configuration: HTTPClient.Configuration
    private let idleLimit: Duration
    private let now: @Sendable () -> ContinuousClock.Instant

    /// - Parameters:
    ///   - idleLimit: how long a host's client is kept without a request for it.
    ///   - now: the clock (tests move it).
    init(configuration: HTTPClient.Configuration, idleLimit: Duration = .seconds(600),
         now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.configuration = configuration
        self.idleLimit = idleLimit
        self.now = now
    }

    /// A client that resolves each host itself, trying every address it has (for when any address is allowed).
    func unpinned() -> HTTPClient {
        state.withLock { state in
            if let client = state.unpinned { return client }
            let client = HTTPClient(eventLoopGroupProvider: .shared(Self.group(&state)), configuration: configuration)
            state.unpinned = client
            return client
        }
    }

    /// Its own event loop thread: with Swift concurrency on the shared loops, requests made from a loop stay on it,
    /// so without this every webhook connection would share one thread with the pushes.
    private static func group(_ state: inout State) -> MultiThreadedEventLoopGroup {
        let group = state.group ?? MultiThreadedEventLoopGroup(numberOfThreads: 1)
        state.group = group
        return group
    }

    /// The client in use for `host`, if it has been checked.
    func pinned(host: String) -> HTTPClient? {
        let now = now()
        return state.withLock { state in
            state.pins[host]?.lastUsed = now
            return state.pins[host]?.client
        }
    }

    /// The client for `host` that connects to one of `addresses` (each checked): its current address while it is among
    /// them and reachable, else the one after it in `addresses` (the first when it is not among them).
    func client(host: String, addresses: [String]) -> HTTPClient {
        let now = now()
        return state.withLock { state in
            sweep(&state, at: now)
            state.pins[host]?.lastUsed = now
            let current = state.pins[host]
            let next: String
            if let current, let index = addresses.firstIndex(of: current.address) {
                if !current.unreachable { return current.client }
                next = addresses[(index + 1) % addresses.count]
                // (The only address there is: tried again as it is.)
                if next == current.address {
                    state.pins[host]?.unreachable = false
                    return current.client
                }
            } else {
                next = addresses[0]
            }
            let group = Self.group(&state)
            var configuration = configuration
            // (A literal address is the one checked already: nothing to resolve.)
            if (try? SocketAddress(ipAddress: host, port: 0)) == nil {
                configuration.dnsOverride = [host: next]
            }
            let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
            if let old = current?.client { retire(old, &state) }
            state.pins[host] = Pin(address: next, client: client, lastUsed: now)
            return client
        }
    }

    /// Retires the clients of hosts not asked for in `idleLimit` (looked at once a minute at most).
    private func sweep(_ state: inout State, at now: ContinuousClock.Instant) {
        if let swept = state.swept, now - swept < .seconds(60) { return }
        state.swept = now
        for (host, pin) in state.pins where now - pin.lastUsed >= idleLimit {
            state.pins[host] = nil
            retire(pin.client, &state)
        }
    }

    /// Shuts `client` down in the background; the task removes itself from `retiring` when done (it needs the lock,
    /// which the caller holds until the task is in the table).
    private func retire(_ client: HTTPClient, _ state: inout State) {
        let number = state.retired
        state.retired += 1
        state.retiring[number] = Task { [self] in
            try? await client.shutdown()
            _ = self.state.withLock { $0.retiring.removeValue(forKey: number) }
        }
    }

    /// Hosts with a client, and clients still shutting down (for tests).
    var counts: (pinned: Int, retiring: Int) {
        state.withLock { ($0.pins.count, $0.retiring.count) }
    }

    /// A connection to `host`'s current address failed.
    func connectionFailed(host: String) {
        state.withLock { $0.pins[host]?.unreachable = true }
    }

    func shutdown() async {
        let (clients, retiring, group) = state.withLock { state in
            defer { state = State() }
            return (state.pins.values.map(\.client) + (state.unpinned.map { [$0] } ?? []), state.retiring, state.group)
        }
        for task in retiring.values { await task.value }
        for client in clients { try? await client.shutdown() }
        try? await group?.shutdownGracefully()
    }
}
