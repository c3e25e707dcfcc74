import Foundation
import LiveRelayCore
import LiveRelayDelivery
import LiveRelayPostgres
import LiveRelayServer
import Synchronization
import Testing

/// A webhook endpoint whose host takes long to resolve holds up only its own events (README "Activity lifecycle":
/// an endpoint that fails or hangs never delays another endpoint's events), here with a webhook worker whose sender's
/// address check for one endpoint does not come back until the test lets it.
@Suite("Webhook address checks", .timeLimit(.minutes(5)))
struct WebhookLookupTests {
    /// Checks every URL at once except `slowURL`'s, which waits for `release()`; records what it is asked to send.
    final class SlowLookupSender: WebhookSender {
        let slowURL: String
        private let state = Mutex((released: false, sent: [String]()))

        init(slowURL: String) { self.slowURL = slowURL }

        var sent: [String] { state.withLock { $0.sent } }
        func release() { state.withLock { $0.released = true } }

        func refusal(of url: String) async -> String? {
            if url == slowURL {
                _ = try? await pollUntil(timeout: .seconds(60)) { state.withLock { $0.released } }
            }
            return nil
        }

        func send(_ request: WebhookRequest) async -> WebhookResult {
            state.withLock { $0.sent.append(request.url) }
            return WebhookResult(delivered: true, httpStatus: 204)
        }

        func shutdown() async {}
    }

    @Test("while one endpoint's address check hangs, another endpoint gets its events, and the first gets them after")
    func slowLookupHoldsOnlyItsEndpoint() async throws {
        try await Harness.with { h in
            let slow = "https://slow.liverelay.invalid/hook", fast = "https://fast.liverelay.invalid/hook"
            let sender = SlowLookupSender(slowURL: slow)
            let connector = try DatabaseConnector(url: h.databaseURL)
            let listener = WakeupListener(connector: connector, logger: h.logger)
            let configuration = try RelayConfiguration.fromEnvironment(h.relayEnvironment, files: LocalFiles())
            let worker = WebhookWorker(connector: connector, listener: listener, sender: sender,
                                       configuration: configuration.delivery, logger: h.logger)
            let running = Task { try await worker.run() }
            defer { running.cancel() }
            try await h.sql("""
                INSERT INTO webhook_endpoint (url, secret)
                VALUES (\(slow), 'whsec_slow_0123456789'), (\(fast), 'whsec_fast_0123456789')
                """)
            try await h.registerActivity(session: "lookup-1")
            listener.ringAll()
            let fastSent = try await pollUntil(timeout: .seconds(20)) { sender.sent.contains(fast) }
            #expect(fastSent, "the other endpoint's event waited for the slow check: sent \(sender.sent)")
            #expect(!sender.sent.contains(slow))
            // Its outcome is recorded while the other endpoint's check still hangs.
            let recorded = try await pollUntil(timeout: .seconds(20)) {
                try await h.rows("""
                    SELECT count(*)::int8 FROM delivery_log WHERE transport = 'webhook' AND status = 'sent'
                    """, as: Int64.self) == [1]
            }
            #expect(recorded)
            #expect(!sender.sent.contains(slow))
            sender.release()
            #expect(try await pollUntil(timeout: .seconds(20)) { sender.sent.contains(slow) }, "\(sender.sent)")
            #expect(sender.sent.filter { $0 == fast }.count == 1)
        }
    }
}
