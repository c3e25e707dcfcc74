import Foundation
import LiveRelayCore
import LiveRelayMetrics
import LiveRelayPostgres
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle

/// Claims due outbox rows, delivers them through each platform's transport and records every outcome, one
/// transaction per batch.
///
/// A crash at any point rolls the batch back: the rows are claimed again and the worst case is a resend of
/// the batch that was in flight.
public final class DeliveryWorker: Service, Sendable {
    private let connector: DatabaseConnector
    private let listener: WakeupListener
    let transports: [TransportKind: any DeliveryTransport]
    let configuration: DeliveryConfiguration
    let logger: Logger
    private let store: OutboxStore
    private let planner: DeliveryPlanner
    private let gateID: Int
    private let doorbell: Doorbell
    private let stopping: StopSignal
    private let metrics: RelayMetrics?
    private let recorder: OutcomeRecorder
    private let eventLoop: (any EventLoop)?

    /// - Parameters:
    ///   - transports: one per configured push service; deliveries for the others are settled `failed`.
    ///   - eventLoop: where the worker runs and its database connection lives; its transports' connections should
    ///     live there too (then a wake-up, its claim and its push run on one thread).
    public init(connector: DatabaseConnector, listener: WakeupListener, transports: [any DeliveryTransport],
                configuration: DeliveryConfiguration, metrics: RelayMetrics? = nil, stop: StopSignal = StopSignal(),
                eventLoop: (any EventLoop)? = nil, logger: Logger) {
        self.eventLoop = eventLoop
        self.stopping = stop
        self.metrics = metrics
        self.connector = connector
        self.listener = listener
        self.transports = Dictionary(transports.map { ($0.kind, $0) }, uniquingKeysWith: { first, _ in first })
        self.configuration = configuration
        var planner = DeliveryPlanner()
        planner.priority10PerHour = configuration.priority10PerHour
        planner.foregroundPolicy = configuration.foregroundPolicy
        planner.widgetMinIntervalSeconds = configuration.widgetMinIntervalSeconds
        self.planner = planner
        recorder = OutcomeRecorder(retry: configuration.retry, configured: Set(self.transports.keys))
        self.logger = logger
        self.store = OutboxStore(logger: logger)
        (self.gateID, self.doorbell) = listener.register(sharesWork: true, loop: eventLoop)
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await EventLoopExecutor.run(on: self.eventLoop) { await self.loop() }
            // Stopped by another worker's shutdown: a service must not end before the group asks it to.
            try? await gracefulShutdown()
        } onGracefulShutdown: {
            self.stopTakingBatches()
        }
    }

    /// Lets the batch in flight finish but starts no new one, in this worker and in every worker sharing its stop
    /// signal (the service group tells workers one after the other; none should start a batch while another drains).
    public func stopTakingBatches() {
        stopping.stop()
        listener.ringAll()
    }

    /// The longest a batch may take (then it rolls back): the push services get at most `batchLimitSeconds` (60 s)
    /// of it, the database the rest.
    private var batchDeadline: Duration { .seconds(90) }

    private var isStopping: Bool { stopping.isStopped || Task.isCancelled }

    private func loop() async {
        let poll = Duration.milliseconds(configuration.pollIntervalMilliseconds)
        await connector.runReconnecting(
            role: "delivery worker", logger: logger, on: eventLoop, shouldStop: { isStopping },
            onFailure: { listener.reportIdle(gateID) }
        ) { connection in
            try await drain(on: connection, poll: poll)
        }
        listener.reportIdle(gateID)
    }

    /// Runs batches until stopped, waiting for the doorbell whenever there is nothing to do.
    private func drain(on connection: PostgresConnection, poll: Duration) async throws {
        // A batch's commit records pushes APNs already has; if PostgreSQL crashed before that commit reached disk,
        // the only effect is a resend of those pushes, the same at-least-once window as a relay crash. So this
        // session does not wait for its WAL flush (writers' commits stay durable), which keeps the relay's fsyncs
        // out of the writers' way.
        let configuring = "configuring the worker session"
        _ = try await ConnectionScope.run(on: connection, deadline: .seconds(5), what: configuring) {
            // One round trip for the three settings. plan_cache_mode: the statements without plan settings of their
            // own (the claim and the record have theirs, sql/040 and 042) are planned for the tables as they are
            // now (the outbox swings between empty and 100,000 rows; a generic plan cached while it was empty would
            // scan the backlog). idle_in_transaction_session_timeout: between batches the session sits in a
            // transaction that has only begun (see runBatch), holding no lock, no snapshot and no transaction id, so
            // a timeout meant for forgotten transactions must not end it.
            try await connection.query("""
                SELECT set_config('synchronous_commit', 'off', false),
                       set_config('plan_cache_mode', 'force_custom_plan', false),
                       set_config('idle_in_transaction_session_timeout', '0', false)
                """, logger: self.logger)
            try await connection.query("BEGIN", logger: self.logger)
        }
        // A worker starts as one that has waited: its first claim is a first batch (`BatchLimit`).
        var waited = true
        while !isStopping {
            let result: BatchResult
            do {
                let limit = BatchLimit.rows(batchSize: configuration.batchSize, afterWait: waited)
                result = try await runBatchWithDeadline(on: connection, limit: limit)
            } catch is CancellationError {
                // The shutdown budget ran out while this batch waited (see RelayServer.gracefulShutdownBudget).
                logger.warning("""
                    stopped before the batch in flight finished: it was rolled back, and its rows stay in the outbox \
                    for the next relay
                    """)
                throw CancellationError()
            }
            // How long it waits for its doorbell before the next batch; nil: it goes on at once.
            let pause: Duration?
            if result.processed > 0 {
                // This worker looks again at once; the others were rung when its claim came back full (ringing
                // every worker after every batch cost each one-row write several empty claims). A worker that
                // skipped rows of an activity this batch held looks again within 20 ms (below).
                listener.ringAfterBatch()
                // A first batch (`BatchLimit`) that came back full is a backlog's start: the worker goes on with
                // full batches, whatever wakes it.
                let full = result.filled || result.more
                if !full, let followUp = listener.walFollowUp(gateID, claimed: true) {
                    // The relay reads the log: every commit rings a worker, so one that did not fill its batch waits
                    // for its doorbell (claiming once more would find nothing, as for a named batch below).
                    pause = followUp.pause(poll: poll)
                } else if result.named && !full {
                    // It sent what a wake-up named: the writes that came meanwhile without one (they found the relay
                    // busy) are found by the re-scan that follows going idle, so it goes idle now rather than
                    // claiming once more for nothing, as almost every one-row write would.
                    listener.reportIdle(gateID)
                    pause = poll
                } else {
                    pause = nil
                }
            } else if result.claimed > 0 {
                // Everything claimed belongs to activities another relay is sending right now.
                pause = min(poll, .milliseconds(20))
            } else if let followUp = listener.walFollowUp(gateID, claimed: false) {
                pause = followUp.pause(poll: poll)
            } else {
                listener.reportIdle(gateID)
                pause = poll
            }
            if let pause { await doorbell.wait(timeout: pause) }
            waited = pause != nil
        }
    }

    /// Runs a batch that ends (rolled back) when the connection closes, the deadline passes or we are cancelled.
    private func runBatchWithDeadline(on connection: PostgresConnection, limit: Int) async throws -> BatchResult {
        try await ConnectionScope.run(on: connection, deadline: batchDeadline, what: "running a delivery batch") {
            try await self.runBatch(on: connection, limit: limit)
        }
    }

    /// One batch: claim, lock activities, build, send, record, commit; then begin the next batch's transaction.
    ///
    /// The transaction is begun when the previous batch ends, not when a wake-up comes, so that a wake-up costs one
    /// round trip (the claim) before the push is on its way. Any error ends the connection (and the transaction).
    ///
    /// A claim that found nothing ends its transaction too: it locked no row, but its statements took their tables'
    /// `AccessShareLock`s, which would otherwise be held while the worker waits, and an `ALTER TABLE` (a newer relay's
    /// migration) queued behind them would stop every writer. Empty claims are rare on the wake-up path (the gate's
    /// re-scan claims only when something is due); the poll makes one per worker every 500 ms.
    /// `limit`: the most rows its general claim may take (`BatchLimit`).
    func runBatch(on connection: PostgresConnection, limit: Int) async throws -> BatchResult {
        let result = try await batch(on: connection, limit: limit)
        // Commits and begins the next transaction in one statement (one round trip, where COMMIT and BEGIN took two).
        try await connection.query("COMMIT AND CHAIN", logger: logger)
        if result.queuedWebhooks > 0 { listener.ringWebhooks() }
        return result
    }

    /// What a batch did: rows claimed and settled, webhook rows its lifecycle events queued, whether it claimed
    /// just the rows a wake-up named, and whether its claim came back full (as many rows as it asked for: more may
    /// be waiting).
    struct BatchResult {
        var claimed = 0
        var processed = 0
        var queuedWebhooks = 0
        var named = false
        var filled = false
        /// It left rows of a channel behind the step it took, or queued some: claim again at once.
        var more = false
    }

    private func batch(on connection: PostgresConnection, limit: Int) async throws -> BatchResult {
        let clock = ContinuousClock()
        let started = clock.now
        // The rows a writer's wake-up named, by primary key (cheap, whatever the queue holds); when it names none,
        // or another worker took them, the general claim. Either way the worker claims again after this batch.
        let (named, notifiedAt) = listener.takeNotifiedRows(limit: configuration.batchSize)
        var claim = named.isEmpty ? OutboxStore.Claim() : try await store.claim(ids: named, on: connection)
        let byName = !claim.rows.isEmpty
        if !byName {
            claim = try await store.claim(limit: limit, on: connection)
        }
        let rows = claim.rows
        let claimed = clock.now
        let claimedAt = Date().timeIntervalSince1970
        guard !rows.isEmpty else { return BatchResult() }
        // Busy from the claim on, so that the relay does not say idle while this batch sends.
        listener.reportBusy(gateID)
        // More than a batch is waiting: the other workers claim beside this one while it sends (after its batch, they
        // would wait for its sends and record: the first 45 ms of a 1,000-channel update, one worker at work).
        if rows.count >= limit { listener.ringOtherWorkers(than: gateID) }
        let plan = planner.plan(
            rows: rows, snapshots: claim.snapshots, lockedActivities: claim.lockedActivities,
            channels: claim.channels, lockedChains: claim.lockedChains, widgets: claim.widgets, now: claim.now)
        let planned = clock.now

        var outcome = BatchOutcome()
        for settled in plan.settled {
            outcome.finishedRowIDs.append(settled.row.id)
            var entry = DeliveryLogEntry(
                row: settled.row, status: settled.status, error: settled.reason.rawValue, transport: nil, pushType: nil,
                environment: nil, token: nil, providerStatus: nil, providerReason: nil, latencyMilliseconds: nil)
            if settled.row.kind == .channel {
                entry.channel = settled.channel ?? ""
                entry.channelSide = settled.row.platform
            }
            outcome.logs.append(entry)
        }
        // A widget token inside its reload window: its rows wait for the window's end (no request, no log row, and
        // not an attempt).
        outcome.deferredWidgetRows = plan.deferred.map { .init(rowID: $0.row.id, delaySeconds: $0.delaySeconds) }
        let results = await deliver(plan.pushes)
        let sent = clock.now
        CredentialsAlarm.shared.check(results, of: plan.pushes, logger: logger)
        for (push, result) in zip(plan.pushes, results) {
            let dead = recorder.record(result, of: push, now: Date().timeIntervalSince1970,
                                       random: .random(in: 0...1), into: &outcome)
            if let dead {
                logger.info("token invalidated", metadata: [
                    "token": "\(redactedToken(dead.token))", "reason": "\(dead.reason)",
                    "transport": "\(dead.transport.rawValue)",
                ])
            }
        }
        let (queuedWebhooks, queuedChannelRows) = try await store.record(outcome, on: connection)
        logger.debug("batch", metadata: [
            "rows": "\(rows.count)", "pushes": "\(plan.pushes.count)",
            "woken_ms": "\(notifiedAt.map { (started - $0).milliseconds } ?? -1)",
            "waited_ms": "\(((claimedAt - (rows.map(\.enqueuedAt).min() ?? claimedAt)) * 1000))",
            "claim_ms": "\((claimed - started).milliseconds)", "read_ms": "\((planned - started).milliseconds)",
            "send_ms": "\((sent - planned).milliseconds)", "record_ms": "\((clock.now - sent).milliseconds)",
        ])
        if let metrics {
            for entry in outcome.logs {
                metrics.recordOutcome(status: entry.status, reason: entry.providerReason, transport: entry.transport)
                if entry.status == .skipped { metrics.recordPushAvoided(reason: entry.error ?? "") }
                if let priority = entry.priority, let reason = entry.priorityReason, entry.status != .retrying {
                    metrics.recordPriority(priority, reason: reason)
                }
                if let latency = entry.latencyMilliseconds, let transport = entry.transport,
                   entry.status != .coalesced {
                    metrics.recordCommitToDelivery(seconds: latency / 1000, transport: transport)
                }
            }
        }
        return BatchResult(claimed: rows.count,
                           processed: plan.settled.count + plan.deferred.count
                               + plan.pushes.reduce(0) { $0 + $1.rows.count },
                           queuedWebhooks: queuedWebhooks, named: byName,
                           filled: rows.count >= (byName ? configuration.batchSize : limit),
                           more: plan.left > 0 || queuedChannelRows > 0)
    }
}
