import Foundation
import LiveRelayCore
@testable import LiveRelayWebhooks
import Synchronization
import Testing

/// A webhook goes to the address its check allowed, never to the answer of a later lookup (DNS rebinding): the
/// transport resolves a host once a batch, checks every address, and connects to one of them by address.
@Suite("Webhook addresses", .timeLimit(.minutes(2)))
struct WebhookAddressTests {
    /// A resolver for names the system cannot resolve (`.invalid`), giving the answers in turn (each a list of
    /// addresses; the last one again once they run out), and counting its calls.
    final class Resolver: Sendable {
        private let state: Mutex<(answers: [[[UInt8]]], calls: Int)>
        init(_ answers: [[UInt8]]...) { state = Mutex((answers, 0)) }
        var calls: Int { state.withLock { $0.calls } }
        func resolve(_ name: String) throws -> [[UInt8]] {
            try state.withLock { state in
                guard name.hasSuffix(".invalid") else { throw WebhookURLGuard.ResolutionError() }
                state.calls += 1
                return state.answers.count > 1 ? state.answers.removeFirst() : state.answers[0]
            }
        }
    }

    static func request(_ url: String) -> WebhookRequest {
        WebhookRequest(url: url, secret: "whsec_address_0123456789", eventID: UUID(), body: #"{"id":"x"}"#)
    }

    /// A transport that pins addresses, resolving with `resolver`.
    static func pinningTransport(allowPrivate: Bool = true, _ resolver: Resolver) -> WebhookTransport {
        WebhookTransport(
            guardrail: WebhookURLGuard(allowPrivate: allowPrivate) { try resolver.resolve($0) }, pinning: true)
    }

    /// Runs a receiver on loopback while `body` runs with it and its URL, whose host is `host`.
    static func withReceiver(host: String, _ body: @Sendable (WebhookReceiver, String) async throws -> Void)
        async throws {
        let receiver = WebhookReceiver()
        try await receiver.run { local in
            try await body(receiver, local.replacingOccurrences(of: "127.0.0.1", with: host))
        }
    }

    /// Checks the URL and sends to it, `times` times in turn, as the worker does claim after claim (private networks
    /// allowed, addresses pinned).
    static func checkAndSend(_ url: String, times: Int, resolver: Resolver) async -> [WebhookResult] {
        let transport = pinningTransport(resolver)
        var results: [WebhookResult] = []
        for _ in 0..<times {
            #expect(await transport.refusal(of: url) == nil)
            results.append(await transport.send(request(url)))
        }
        await transport.shutdown()
        return results
    }

    @Test("a request goes to the checked address under the URL's own name, without a second lookup")
    func pinnedAddress() async throws {
        try await Self.withReceiver(host: "hooks.liverelay.invalid") { receiver, url in
            let resolver = Resolver([[127, 0, 0, 1]])
            let transport = Self.pinningTransport(resolver)
            #expect(await transport.refusal(of: url) == nil)
            let first = await transport.send(Self.request(url))
            let second = await transport.send(Self.request(url))
            await transport.shutdown()
            // The system resolver knows no `.invalid` name: the requests went by the checked address.
            #expect(first.delivered && second.delivered, "\(first) \(second)")
            #expect(resolver.calls == 1)
            let port = try #require(URLComponents(string: url)?.port)
            #expect(receiver.received.map(\.host) == Array(repeating: "hooks.liverelay.invalid:\(port)", count: 2))
        }
    }

    @Test("a name that resolves elsewhere at the next check is sent to its new address, not the old one")
    func addressFollowsTheCheck() async throws {
        try await Self.withReceiver(host: "moves.liverelay.invalid") { receiver, url in
            // 127.0.0.2 is loopback too, where nothing listens on the receiver's port.
            let resolver = Resolver([[127, 0, 0, 1]], [[127, 0, 0, 2]], [[127, 0, 0, 1]])
            let results = await Self.checkAndSend(url, times: 3, resolver: resolver)
            #expect(results.map(\.delivered) == [true, false, true], "\(results)")
            #expect(results[1].error == "no answer: connection failed: Connection refused", "\(results[1])")
            #expect(receiver.received.count == 2)
        }
    }

    @Test("a name with several addresses moves on to the next one after a connection to one failed")
    func unreachableAddress() async throws {
        try await Self.withReceiver(host: "pair.liverelay.invalid") { receiver, url in
            // Nothing listens on the receiver's port at 127.0.0.2, the first address the name gives.
            let resolver = Resolver([[127, 0, 0, 2], [127, 0, 0, 1]])
            let results = await Self.checkAndSend(url, times: 3, resolver: resolver)
            #expect(results.map(\.delivered) == [false, true, true], "\(results)")
            #expect(receiver.received.count == 2)
        }
    }

    @Test("a receiver that refuses the connection is told at once, not after the pool's retries until the timeout")
    func refusedAtOnce() async throws {
        // Nothing listens on the receiver's port at 127.0.0.2.
        try await Self.withReceiver(host: "127.0.0.2") { receiver, url in
            let transport = WebhookTransport(guardrail: WebhookURLGuard(allowPrivate: true), pinning: false)
            let started = ContinuousClock.now
            let result = await transport.send(Self.request(url))
            let took = ContinuousClock.now - started
            await transport.shutdown()
            #expect(!result.delivered && result.error?.contains("refused") == true, "\(result)")
            #expect(took < .seconds(2), "\(took): the connect timeout is 5 s")
            #expect(receiver.received.isEmpty)
        }
    }

    @Test("a name with IPv6 and IPv4 addresses is tried at its IPv4 address first")
    func ipv4First() async throws {
        try await Self.withReceiver(host: "dual.liverelay.invalid") { receiver, url in
            // The name answers IPv6 first, at an address that cannot be reached (2001:db8::/32, documentation only).
            let resolver = Resolver([[0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1], [127, 0, 0, 1]])
            let results = await Self.checkAndSend(url, times: 2, resolver: resolver)
            #expect(results.map(\.delivered) == [true, true], "\(results)")
            #expect(receiver.received.count == 2)
        }
    }

    @Test("callers that ask while a host's lookup runs share it: one lookup, however many lanes wait")
    func sharedLookup() async throws {
        let resolver = Resolver([[93, 184, 216, 34]])
        let released = Atomic(false)
        let transport = WebhookTransport(guardrail: WebhookURLGuard(allowPrivate: false) { name in
            _ = try await pollUntil(timeout: .seconds(30)) { released.load(ordering: .acquiring) }
            return try resolver.resolve(name)
        }, pinning: true)
        let url = "https://shared.liverelay.invalid/hook"
        async let refusals = withTaskGroup(of: String?.self) { group in
            for _ in 0..<8 { group.addTask { await transport.refusal(of: url) } }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(try await pollUntil(timeout: .seconds(10)) { transport.lookupsWaiting == 8 })
        released.store(true, ordering: .releasing)
        let answers = await refusals
        await transport.shutdown()
        #expect(answers.count == 8 && answers.allSatisfy { $0 == nil }, "\(answers)")
        #expect(resolver.calls == 1)
        #expect(transport.lookupsWaiting == 0)
    }

    @Test("with private networks allowed nothing is pinned: a receiver on localhost is reached by the client's lookup")
    func unpinnedWhenPrivateAllowed() async throws {
        try await Self.withReceiver(host: "localhost") { receiver, url in
            let transport = WebhookTransport(allowPrivate: true)
            #expect(await transport.refusal(of: url) == nil)
            let result = await transport.send(Self.request(url))
            // (And a name no lookup knows is for the client to fail on, not refused before it is tried.)
            let unknown = url.replacingOccurrences(of: "localhost", with: "nowhere.liverelay.invalid")
            #expect(await transport.refusal(of: unknown) == nil)
            let failed = await transport.send(Self.request(unknown))
            await transport.shutdown()
            #expect(result.delivered, "\(result)")
            #expect(!failed.delivered && failed.error?.hasPrefix("no answer:") == true, "\(failed)")
            #expect(receiver.received.count == 1)
        }
    }

    @Test("without private networks allowed, a name that resolves to loopback is refused, even sent unchecked")
    func privateAddressRefused() async throws {
        try await Self.withReceiver(host: "inside.liverelay.invalid") { receiver, url in
            let resolver = Resolver([[93, 184, 216, 34]], [[127, 0, 0, 1]])
            let transport = Self.pinningTransport(allowPrivate: false, resolver)
            // Public at registration, loopback when the request is made: the send checks again and refuses.
            #expect(await WebhookURLGuard(allowPrivate: false) { try resolver.resolve($0) }.refusal(of: url) == nil)
            let sent = await transport.send(Self.request(url))
            let refusal = await transport.refusal(of: url)
            await transport.shutdown()
            #expect(!sent.delivered && sent.error?.contains("resolves to a loopback address") == true, "\(sent)")
            #expect(refusal?.contains("LIVERELAY_WEBHOOK_ALLOW_PRIVATE") == true, "\(refusal ?? "nil")")
            #expect(receiver.received.isEmpty)
        }
    }

    /// A clock the test moves.
    final class Clock: Sendable {
        private let instant = Mutex(ContinuousClock.now)
        var now: ContinuousClock.Instant { instant.withLock { $0 } }
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
    }

    @Test("a host not asked for in ten minutes loses its client; a retired client leaves the table once shut down")
    func idleHostsAreDropped() async throws {
        let clock = Clock()
        let clients = WebhookClients(configuration: .init(), idleLimit: .seconds(600), now: { clock.now })
        _ = clients.client(host: "a.liverelay.invalid", addresses: ["192.0.2.1"])
        _ = clients.client(host: "b.liverelay.invalid", addresses: ["192.0.2.2"])
        clock.advance(.seconds(300))
        #expect(clients.pinned(host: "b.liverelay.invalid") != nil)
        clock.advance(.seconds(360))
        // a: 11 minutes without a request; b: 6.
        _ = clients.client(host: "c.liverelay.invalid", addresses: ["192.0.2.3"])
        #expect(clients.pinned(host: "a.liverelay.invalid") == nil)
        #expect(clients.pinned(host: "b.liverelay.invalid") != nil)
        #expect(clients.counts.pinned == 2)
        let retired = try await pollUntil(timeout: .seconds(10)) { clients.counts.retiring == 0 }
        #expect(retired, "a's client was not shut down, or stayed in the table")
        await clients.shutdown()
    }
}
