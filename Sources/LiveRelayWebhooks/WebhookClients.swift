import AsyncHTTPClient
import NIOCore
import NIOPosix
import Synchronization

/// The webhook transport's HTTP clients, one per host name, each of which connects only to an address the guard
/// checked for that name (AsyncHTTPClient's `dnsOverride`, which keeps the name for `Host`, SNI and the certificate).
/// So a name that resolves somewhere else between the check and the connection (DNS rebinding) cannot carry a request
/// to an address the operator did not allow. A name keeps its address while later checks still return it (a
/// round-robin name does not churn connections); when they no longer do, a new client takes over and the old one is
/// shut down (a request still on it fails, and is retried like any other).
final class WebhookClients: Sendable {
    private struct Pin {
        var address: String
        var client: HTTPClient
    }

    private struct State {
        /// Made at the first request: a relay without webhooks never starts its thread (nor has one to shut down).
        var group: MultiThreadedEventLoopGroup?
        var pins: [String: Pin] = [:]
        var retiring: [Task<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let configuration: HTTPClient.Configuration

    init(configuration: HTTPClient.Configuration) {
        self.configuration = configuration
    }

    /// The client in use for `host`, if it has been checked.
    func pinned(host: String) -> HTTPClient? {
        state.withLock { $0.pins[host]?.client }
    }

    /// The client for `host` that connects to one of `addresses` (each checked; the first when the host's current
    /// address is not among them).
    func client(host: String, addresses: [String]) -> HTTPClient {
        state.withLock { state in
            if let pin = state.pins[host], addresses.contains(pin.address) { return pin.client }
            // Its own event loop thread: with Swift concurrency on the shared loops, requests made from a loop stay
            // on it, so without this every webhook connection would share one thread with the pushes.
            let group = state.group ?? MultiThreadedEventLoopGroup(numberOfThreads: 1)
            state.group = group
            var configuration = configuration
            // (A literal address is the one checked already: nothing to resolve.)
            if (try? SocketAddress(ipAddress: host, port: 0)) == nil {
                configuration.dnsOverride = [host: addresses[0]]
            }
            let client = HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration)
            if let old = state.pins[host]?.client {
                state.retiring.append(Task { try? await old.shutdown() })
            }
            state.pins[host] = Pin(address: addresses[0], client: client)
            return client
        }
    }

    func shutdown() async {
        let (clients, retiring, group) = state.withLock { state in
            defer { state = State() }
            return (state.pins.values.map(\.client), state.retiring, state.group)
        }
        for task in retiring { await task.value }
        for client in clients { try? await client.shutdown() }
        try? await group?.shutdownGracefully()
    }
}
