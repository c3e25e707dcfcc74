import Foundation
import LiveRelayPostgres
@testable import LiveRelayStream
import Synchronization
import Testing

/// The hub on its own, against a real database: how often it reads the log while it has subscribers.
@Suite("Broadcast hub")
struct BroadcastHubTests {
    /// What the hub hands a subscriber.
    final class Collector: StreamSink {
        let events = Mutex<[BroadcastEvent]>([])

        func send(_ item: BroadcastHub.Item) -> Bool {
            if case .event(let event) = item { events.withLock { $0.append(event) } }
            return true
        }

        func finish(stopping: Bool) {}

        func waitFor(_ name: String, timeout: Duration = .seconds(10)) async throws {
            if try await pollUntil(timeout: timeout, { events.withLock { $0.contains { $0.name == name } } }) { return }
            Issue.record("no \(name) event within \(timeout); got \(events.withLock { $0.map(\.name) })")
            throw Harness.TimedOut()
        }
    }

    @Test("with a subscriber, the rings that come within the gather window are served by one read, which delivers")
    func ringsGather() async throws {
        try await Harness.with { h in
            let connector = try DatabaseConnector(url: h.databaseURL)
            let listener = WakeupListener(connector: connector, logger: h.logger)
            // A window long enough that the second ring below is inside it on any machine, and no read but the rings'.
            let hub = BroadcastHub(connector: connector, listener: listener, logger: h.logger,
                                   gatherWindow: .seconds(1), pollInterval: .seconds(600))
            let running = Task { try await hub.run() }
            defer { running.cancel() }
            try await hub.waitUntilStarted()
            let collector = Collector()
            _ = hub.subscribe(channels: ["test:hub"], sink: collector)

            // A first event read and delivered: the hub is back waiting for a ring.
            try await h.sql("INSERT INTO broadcast_log (channels, event, data) VALUES ('{test:hub}', 'first', '{}')")
            listener.ringAll()
            try await collector.waitFor("first")
            let before = hub.readsBegun

            // Two rings 300 ms apart (as a write's wake-up and its batch's end ring it, only further apart).
            try await h.sql("INSERT INTO broadcast_log (channels, event, data) VALUES ('{test:hub}', 'second', '{}')")
            listener.ringAll()
            try await Task.sleep(for: .milliseconds(300))
            listener.ringAll()
            try await collector.waitFor("second")
            // A third event, rung for after the second was delivered: the hub reads one at a time, so when it has
            // delivered the third every read the rings above started has begun (without the window, the second ring
            // started one of its own: 3 reads).
            try await h.sql("INSERT INTO broadcast_log (channels, event, data) VALUES ('{test:hub}', 'third', '{}')")
            listener.ringAll()
            try await collector.waitFor("third")
            #expect(hub.readsBegun - before == 2, "one read for both rings, one for the third")
            #expect(collector.events.withLock { $0.map(\.name) } == ["first", "second", "third"])
        }
    }
}
