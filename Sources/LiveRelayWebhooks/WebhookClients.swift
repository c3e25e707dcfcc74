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
/// request still on it fails, and is retried like any other).
final class WebhookClients: Sendable {
    private struct Pin {
        var address: String
        var client: HTTPClient
        /// A connection to the address failed: the next check moves on to another of the host's addresses.
        var unreachable = false
    }

    private struct State {
        /// Made at the first request: a relay without webhooks never starts its thread (nor has one to shut down).
        var group: MultiThreadedEventLoopGroup?
        var pins: [String: Pin] = [:]
        /// The client for every host when nothing is pinned (every address allowed).
        var unpinned: HTTPClient?
        var retiring: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let configuration: HTTPClient.Configuration

    init(configuration: HTTPClient.Configuration) {
        self.configuration = configuration
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
        state.withLock { $0.pins[host]?.client }
    }

    /// The client for `host` that connects to one of `addresses` (each checked): its current address while it is among
    /// them and reachable, else the one after it in `addresses` (the first when it is not among them).
    func client(host: String, addresses: [String]) -> HTTPClient {
        state.withLock { state in
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
            if let old = current?.client {
                state.retiring.append(Task { try? await old.shutdown() })
            }
            state.pins[host] = Pin(address: next, client: client)
            return client
        }
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
        for task in retiring { await task.value }
        for client in clients { try? await client.shutdown() }
        try? await group?.shutdownGracefully()
    }
}
