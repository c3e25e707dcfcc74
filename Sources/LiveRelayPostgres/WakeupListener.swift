import Foundation
import Logging
import NIOCore
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
    private let eventLoop: (any EventLoop)?
    /// This relay's row in `relay_wakeup`.
    public let instanceID = UUID()
    private let state = Mutex(State())
    private let gateChanged = Doorbell()

    private struct State {
        /// The consumers' doorbells, by their number in `gate`.
        var doorbells: [Doorbell] = []
        /// The webhook workers': rung by a `webhooks` notification, by `ringWebhooks` and at every (re)connect only
        /// (not by every wake-up: most pushes queue no webhook, and a claim per push doubled B1's latency).
        var webhookDoorbells: [Doorbell] = []
        var gate = WakeupGate()
        var connected = false
    }

    /// - Parameter eventLoop: where the LISTEN connection lives and its notifications are handled: a delivery worker
    ///   on the same loop is rung without a thread hop.
    public init(connector: DatabaseConnector, eventLoop: (any EventLoop)? = nil, logger: Logger) {
        self.connector = connector
        self.eventLoop = eventLoop
        self.logger = logger
    }

    /// Registers a consumer; returns its id and the doorbell to wait on.
    /// - Parameter sharesWork: true for consumers of one shared queue (delivery workers), of which a wake-up rings
    ///   one; the others (the stream hub) are rung on every wake-up. Only consumers that report busy and idle count
    ///   for the gate: the delivery workers.
    /// - Parameter loop: where the consumer runs: its doorbell's timeout timer lives there, so that a ring cancels it
    ///   without waking another thread.
    public func register(sharesWork: Bool = false, loop: (any EventLoop)? = nil) -> (id: Int, doorbell: Doorbell) {
        let doorbell = loop.map { Doorbell(timers: $0) } ?? Doorbell()
        let id = state.withLock { state in
            state.doorbells.append(doorbell)
            return state.gate.register(sharesWork: sharesWork)
        }
        return (id, doorbell)
    }

    /// Rings every consumer.
    public func ringAll() {
        for doorbell in state.withLock({ $0.doorbells + $0.webhookDoorbells }) { doorbell.ring() }
    }

    /// Registers a webhook worker; returns the doorbell to wait on.
    public func registerWebhookWorker() -> Doorbell {
        let doorbell = Doorbell()
        state.withLock { $0.webhookDoorbells.append(doorbell) }
        return doorbell
    }

    /// Webhook rows were queued (by this relay's batch, or by a writer that said so).
    public func ringWebhooks() {
        for doorbell in state.withLock({ $0.webhookDoorbells }) { doorbell.ring() }
    }

    /// The NOTIFY payload of a transaction that queued webhook rows.
    public static let webhooksPayload = "webhooks"

    /// After a worker's batch: the consumers that are not workers (the stream) look for what was committed while
    /// writers did not notify. A worker that finds nothing to do re-scans, goes idle and rings one worker more (see
    /// `writeGate`).
    public func ringAfterBatch() {
        let doorbells = state.withLock { state in
            state.gate.afterBatch().map { state.doorbells[$0] }
        }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// A worker's claim came back full: the other workers claim the rest meanwhile, rather than after its batch.
    public func ringOtherWorkers(than id: Int) {
        let doorbells = state.withLock { state in state.gate.othersThan(id).map { state.doorbells[$0] } }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// Rings for a wake-up: every consumer that does not share work, and one idle consumer of the shared queue (one
    /// claim answers a wake-up, and a worker that finds a full batch rings the others; busy workers claim again by
    /// themselves).
    /// - Parameter notified: a writer's notification: the writer marked this relay's row busy, and the worker rung
    ///   counts as busy until it reports idle (it claims the writer's rows; until then another consumer that finds
    ///   nothing must not publish the relay idle in the middle of that batch).
    /// - Parameter due: for the relay's own re-scan, whether it saw a due delivery (when not, no worker is rung).
    func ringForWakeUp(notified: Bool = false, rows: [Int64] = [], due: Bool = true) {
        let doorbells = state.withLock { state in
            state.gate.wakeUp(notified: notified, rows: rows, due: due, at: .now).map { state.doorbells[$0] }
        }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// The outbox rows named by notifications since the last call (at most `limit`; the rest stay for the next).
    /// A worker claims them by primary key; any it does not get are found by its general claim.
    /// `since`: when the first of them was notified (for the batch's log line).
    public func takeNotifiedRows(limit: Int) -> (rows: [Int64], since: ContinuousClock.Instant?) {
        state.withLock { $0.gate.takeNotifiedRows(limit: limit) }
    }

    /// The row ids of a wake-up's payload ("12,13"; empty for a wake-up that names none).
    static func rowIDs(in payload: String) -> [Int64] {
        payload.isEmpty ? [] : payload.split(separator: ",").compactMap { Int64($0) }
    }

    /// The relay starts reading the write-ahead log for commits (`WALWatcher`), or has lost it: while it reads, its
    /// row says busy, so writers send no NOTIFY. Either way every consumer looks once, for what was committed while
    /// the other wake-up was in charge. Returns whether this was a switch (false: it already was so).
    @discardableResult
    public func watchWAL(_ watching: Bool) -> Bool {
        let switched = state.withLock { $0.gate.watchWAL(watching) }
        if switched { gateChanged.ring() }
        ringAll()
        return switched
    }

    /// The log showed commits of outbox rows (`outbox`) or of stream events alone.
    public func walCommitted(outbox: Bool) {
        let doorbells = state.withLock { state in
            state.gate.walCommitted(outbox: outbox, at: .now).map { state.doorbells[$0] }
        }
        for doorbell in doorbells { doorbell.ring() }
    }

    /// What worker `id` does after a batch that neither filled nor left work behind, while the log is read (nil when
    /// it is not: the worker follows the notifications' rules).
    public func walFollowUp(_ id: Int, claimed: Bool) -> WALFollowUp? {
        state.withLock { $0.gate.walFollowUp(id, claimed: claimed, at: .now) }
    }

    /// A consumer found work: writers need not wake us while it drains.
    public func reportBusy(_ id: Int) {
        if state.withLock({ $0.gate.reportBusy(id) }) { gateChanged.ring() }
    }

    /// A consumer has drained everything it saw.
    public func reportIdle(_ id: Int) {
        if state.withLock({ $0.gate.reportIdle(id) }) { gateChanged.ring() }
    }

    /// True while the LISTEN connection is up.
    public var isConnected: Bool { state.withLock { $0.connected } }

    public func run() async throws {
        await EventLoopExecutor.run(on: eventLoop) {
            await connector.runReconnecting(
                role: "wake-up listener", logger: logger, on: eventLoop,
                shouldStop: { Task.isCancelled || Task.isShuttingDownGracefully },
                onFailure: { state.withLock { $0.connected = false } }
            ) { connection in
                try await cancelWhenGracefulShutdown {
                    try await ConnectionScope.run(on: connection, deadline: nil, what: "listening") {
                        try await self.listen(on: connection)
                    }
                }
            }
        }
        state.withLock { $0.connected = false }
        // Goodbye: writers stop counting on this relay at once. Not when cancelled (that must end now, and a new
        // connection can take seconds on a loaded machine): the row then goes stale, ignored after 2 minutes.
        guard !Task.isCancelled else { return }
        _ = try? await connector.withConnection(logger: logger) { connection in
            try await connection.query(
                "DELETE FROM relay_wakeup WHERE instance_id = \(self.instanceID)", logger: self.logger)
        }
    }

    private func listen(on connection: PostgresConnection) async throws {
        try await connection.listen(on: Self.channel) { notifications in
            let openWriters = try await self.writeGate(on: connection, knowingRow: false)
            // Rows of relays that died without saying goodbye (they refresh theirs every 30 s while alive).
            try await connection.query(
                "DELETE FROM relay_wakeup WHERE updated_at < now() - interval '2 minutes'", logger: self.logger)
            self.state.withLock { $0.connected = true }
            // Re-scan everything after every (re)connect: nothing committed meanwhile is left behind.
            self.ringAll()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await notification in notifications {
                        if notification.payload == Self.webhooksPayload {
                            self.ringWebhooks()
                            continue
                        }
                        // The writer that notified marked our row busy: it is published idle again when the
                        // consumers have drained (reportIdle).
                        self.ringForWakeUp(notified: true, rows: Self.rowIDs(in: notification.payload))
                    }
                    throw ListenerClosed()
                }
                group.addTask { [openWriters] in
                    try await self.keepGate(on: connection, openWriters: openWriters)
                }
                defer { group.cancelAll() }
                try await group.next()
            }
        }
    }

    /// Keeps this relay's row true (and fresh: rewritten every 30 s), and follows the writers that were open when it
    /// last said idle.
    private func keepGate(on connection: PostgresConnection, openWriters: [String]) async throws {
        var open = openWriters, written = ContinuousClock.now, recheck = Duration.milliseconds(10)
        while !Task.isCancelled {
            let refresh = written + .seconds(30) - .now
            await gateChanged.wait(timeout: open.isEmpty ? refresh : min(recheck, refresh))
            if !open.isEmpty {
                open = try await follow(open, on: connection)
                recheck = min(recheck * 2, .seconds(1))
            }
            let stale = state.withLock { $0.gate.takeStale() }
            if stale || ContinuousClock.now >= written + .seconds(30) {
                open = try await writeGate(on: connection)
                written = .now
                recheck = .milliseconds(10)
            }
        }
    }

    /// Publishes whether this relay is idle. When it is, it returns the transactions in progress just after: a writer
    /// that read "busy" before the row said idle did not notify, and its rows may not have been committed when the
    /// consumers looked. Such a writer is among them (it wrote its outbox row, so it has a transaction id, before it
    /// read the row); `follow` has the consumers look again whenever some of them end.
    /// - Parameter knowingRow: whether this connection has written the row before (then an idle write leaves a row
    ///   that a writer has marked busy since, see `WakeupGate.rowSaysIdle`; the first write after a (re)connect
    ///   writes whatever the row says).
    private func writeGate(on connection: PostgresConnection, knowingRow: Bool = true) async throws -> [String] {
        // Set before writing: a notification that arrives meanwhile (a writer marking us busy) must win.
        let (idle, believedIdle) = state.withLock { state in
            let believed = state.gate.rowSaysIdle
            return (state.gate.publish(), believed)
        }
        // When the row said idle, in one snapshot taken after its commit: the writers still open, and whether what the
        // others committed left a delivery due. A worker is rung only then: most of the time the batch that just ended
        // sent everything, and a claim to find nothing cost a round trip and ~0.1 ms of PostgreSQL's time per write.
        let publish = GatePublishStatement(instanceID: instanceID, idle: idle, knowingRow: knowingRow,
                                           believedIdle: believedIdle)
        var result: GatePublishStatement.Row = (written: false, openTransactions: [], anyDue: false)
        for try await row in try await connection.execute(publish, logger: logger) { result = row }
        guard result.written else {
            // A writer marked the row busy after the relay last wrote it: its notification wakes a worker.
            state.withLock { $0.gate.markedBusyByWriter() }
            return []
        }
        guard idle else { return [] }
        ringForWakeUp(due: result.anyDue)
        return result.openTransactions
    }

    /// Of `open`, the transactions still in progress; the consumers look again if some have ended meanwhile and the
    /// relay has stayed idle (when it was woken it looks until it finds nothing, and its next idle period follows the
    /// writers open then).
    private func follow(_ open: [String], on connection: PostgresConnection) async throws -> [String] {
        guard state.withLock({ $0.gate.followsOpenWriters }) else { return [] }
        var still: [String] = []
        for try await xid in try await connection.query("""
            SELECT x::text FROM unnest(\(open)::text[]) AS x WHERE pg_xact_status(x::xid8) = 'in progress'
            """, logger: logger).decode(String.self) { still.append(xid) }
        if still.count < open.count { ringForWakeUp() }
        return still
    }
}

struct ListenerClosed: Error, CustomStringConvertible {
    var description: String { "the LISTEN connection closed" }
}
