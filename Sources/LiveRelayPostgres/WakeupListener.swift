import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Listens for the triggers' wake-up on a dedicated connection and rings every consumer's doorbell.
///
/// It reconnects with backoff and rings everyone after every (re)connect, so what was committed while it was
/// away is picked up by a re-scan. It also keeps this relay's row in `relay_wakeup`: writers only NOTIFY while
/// some relay says it is idle (see migrations/002), which keeps NOTIFY's commit lock off busy writers.
public final class WakeupListener: Service, Sendable {
    public static let channel = "liverelay_wake"

    private let connector: DatabaseConnector
    private let logger: Logger
    private let instanceID = UUID()
    private let state = Mutex(State())
    private let gateChanged = Doorbell()

    private struct State {
        var doorbells: [Doorbell] = []
        /// Consumers that share one queue (delivery workers): a wake-up rings just one of them.
        var sharing: Set<Int> = []
        /// Counts the times this relay published itself idle; a delayed re-scan is for one idle period only.
        var idlePeriod = 0
        var busy: Set<Int> = []
        var connected = false
        /// What this relay's `relay_wakeup` row says, as far as we know: a writer that notifies has set it to busy.
        var publishedIdle = false
    }

    public init(connector: DatabaseConnector, logger: Logger) {
        self.connector = connector
        self.logger = logger
    }

    /// Registers a consumer; returns its id and the doorbell to wait on.
    /// - Parameter sharesWork: true for consumers of one shared queue (delivery workers), of which a wake-up rings
    ///   one; the others (the stream hub) are rung on every wake-up.
    public func register(sharesWork: Bool = false) -> (id: Int, doorbell: Doorbell) {
        let doorbell = Doorbell()
        let id = state.withLock { state in
            state.doorbells.append(doorbell)
            if sharesWork { state.sharing.insert(state.doorbells.count - 1) }
            return state.doorbells.count - 1
        }
        return (id, doorbell)
    }

    /// Rings every consumer.
    public func ringAll() {
        for doorbell in state.withLock({ $0.doorbells }) { doorbell.ring() }
    }

    /// After a worker's batch: the consumers that are not workers (the stream) look for what was committed while
    /// writers did not notify; the other workers only when the batch was full (more than one batch of work). A
    /// worker that finds nothing to do re-scans, goes idle and rings one worker more (see `writeGate`).
    public func ringAfterBatch(from id: Int, full: Bool) {
        let doorbells = state.withLock { state in
            state.doorbells.indices.filter { full ? $0 != id : !state.sharing.contains($0) }.map { state.doorbells[$0] }
        }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// Rings for a wake-up: every consumer that does not share work, and one idle consumer of the shared queue (one
    /// claim answers a wake-up, and a worker that finds a full batch rings the others; busy workers claim again by
    /// themselves).
    func ringForWakeUp() {
        let doorbells = state.withLock { state -> [Doorbell] in
            var ring = state.doorbells.indices.filter { !state.sharing.contains($0) }
            if let worker = state.sharing.sorted().first(where: { !state.busy.contains($0) }) { ring.append(worker) }
            return ring.map { state.doorbells[$0] }
        }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// A consumer found work: writers need not wake us while it drains.
    public func reportBusy(_ id: Int) {
        // After a wake-up the row already says busy (the writer that notified marked it): nothing to write then.
        let changed = state.withLock { state in state.busy.insert(id).inserted && state.busy.count == 1 && state.publishedIdle }
        if changed { gateChanged.ring() }
    }

    /// A consumer has drained everything it saw.
    public func reportIdle(_ id: Int) {
        let changed = state.withLock { state in
            (state.busy.remove(id) != nil || !state.publishedIdle) && state.busy.isEmpty
        }
        if changed { gateChanged.ring() }
    }

    /// True while the LISTEN connection is up.
    public var isConnected: Bool { state.withLock { $0.connected } }

    public func run() async throws {
        await connector.runReconnecting(
            role: "wake-up listener", logger: logger, shouldStop: { Task.isCancelled || Task.isShuttingDownGracefully },
            onFailure: { state.withLock { $0.connected = false } }
        ) { connection in
            try await cancelWhenGracefulShutdown {
                try await ConnectionScope.run(on: connection, deadline: nil, what: "listening") {
                    try await self.listen(on: connection)
                }
            }
        }
        state.withLock { $0.connected = false }
        // Goodbye: writers stop counting on this relay at once. Not when cancelled (that must end now, and a new
        // connection can take seconds on a loaded machine): the row then goes stale, ignored after 2 minutes.
        guard !Task.isCancelled else { return }
        _ = try? await connector.withConnection(logger: logger) { connection in
            try await connection.query("DELETE FROM relay_wakeup WHERE instance_id = \(self.instanceID)", logger: self.logger)
        }
    }

    private func listen(on connection: PostgresConnection) async throws {
        try await connection.listen(on: Self.channel) { notifications in
            try await self.writeGate(on: connection)
            // Rows of relays that died without saying goodbye (they refresh theirs every 30 s while alive).
            try await connection.query(
                "DELETE FROM relay_wakeup WHERE updated_at < now() - interval '2 minutes'", logger: self.logger)
            self.state.withLock { $0.connected = true }
            // Re-scan everything after every (re)connect: nothing committed meanwhile is left behind.
            self.ringAll()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await _ in notifications {
                        // The writer that notified marked our row busy: it is published idle again when the
                        // consumers have drained (reportIdle).
                        self.state.withLock { $0.publishedIdle = false }
                        self.ringForWakeUp()
                    }
                    throw ListenerClosed()
                }
                group.addTask {
                    while !Task.isCancelled {
                        await self.gateChanged.wait(timeout: .seconds(30))
                        try await self.writeGate(on: connection)
                    }
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
    }

    /// Publishes whether this relay is idle; when it becomes idle, consumers re-scan once so that a write
    /// that read "busy" just before the flag flipped is not left waiting for the poll.
    private func writeGate(on connection: PostgresConnection) async throws {
        // Set before writing: a notification that arrives meanwhile (a writer marking us busy) must win.
        let (idle, period) = state.withLock { state in
            state.publishedIdle = state.busy.isEmpty
            if state.busy.isEmpty { state.idlePeriod += 1 }
            return (state.busy.isEmpty, state.idlePeriod)
        }
        try await connection.query("""
            INSERT INTO relay_wakeup (instance_id, idle, updated_at) VALUES (\(instanceID), \(idle), now())
            ON CONFLICT (instance_id) DO UPDATE SET idle = excluded.idle, updated_at = excluded.updated_at
            """, logger: logger)
        if idle {
            // A writer that read "busy" just before this may commit after the re-scan it triggers: look again once
            // its commit has had time to reach disk (the poll is the backstop for anything slower). One worker is
            // enough to look: it rings the others if it finds more than a batch.
            // Not when the relay was woken meanwhile: it re-scans until empty then, and a new idle period has its own.
            ringForWakeUp()
            Task {
                try? await Task.sleep(for: .milliseconds(50))
                if self.state.withLock({ $0.idlePeriod == period && $0.publishedIdle }) { self.ringForWakeUp() }
            }
        }
    }
}

struct ListenerClosed: Error, CustomStringConvertible {
    var description: String { "the LISTEN connection closed" }
}
