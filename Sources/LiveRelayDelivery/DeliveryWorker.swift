import Foundation
import LiveRelayAPNs
import LiveRelayCore
import LiveRelayPostgres
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Claims due outbox rows, sends them to APNs and records every outcome, one transaction per batch.
///
/// A crash at any point rolls the batch back: the rows are claimed again and the worst case is a resend of
/// the batch that was in flight.
public final class DeliveryWorker: Service, Sendable {
    private let connector: DatabaseConnector
    private let listener: WakeupListener
    private let sender: PushSender
    private let configuration: DeliveryConfiguration
    private let logger: Logger
    private let store: OutboxStore
    private let planner = DeliveryPlanner()
    private let gateID: Int
    private let doorbell: Doorbell
    private let stopping: StopSignal
    private let metrics: RelayMetrics?

    public init(connector: DatabaseConnector, listener: WakeupListener, sender: PushSender,
                configuration: DeliveryConfiguration, metrics: RelayMetrics? = nil, stop: StopSignal = StopSignal(),
                logger: Logger) {
        self.stopping = stop
        self.metrics = metrics
        self.connector = connector
        self.listener = listener
        self.sender = sender
        self.configuration = configuration
        self.logger = logger
        self.store = OutboxStore(logger: logger)
        (self.gateID, self.doorbell) = listener.register(sharesWork: true)
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await self.loop()
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

    /// The longest a batch may take (then it rolls back): APNs gets at most `batchLimitSeconds` (60 s) of it, the
    /// database the rest.
    private var batchDeadline: Duration { .seconds(90) }

    private var isStopping: Bool { stopping.isStopped || Task.isCancelled }

    private func loop() async {
        let poll = Duration.milliseconds(configuration.pollIntervalMilliseconds)
        await connector.runReconnecting(
            role: "delivery worker", logger: logger, shouldStop: { isStopping }, onFailure: { listener.reportIdle(gateID) }
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
        _ = try await ConnectionScope.run(on: connection, deadline: .seconds(5), what: "configuring the worker session") {
            // One round trip for the three settings. plan_cache_mode: plan every statement for the queue as it is
            // now (the outbox swings between empty and 100,000 rows, and a generic plan cached while it was empty
            // made each claim scan and sort the whole backlog). idle_in_transaction_session_timeout: between batches
            // the session sits in a transaction that has only begun (see runBatch), holding no lock, no snapshot and
            // no transaction id, so a timeout meant for forgotten transactions must not end it.
            try await connection.query("""
                SELECT set_config('synchronous_commit', 'off', false),
                       set_config('plan_cache_mode', 'force_custom_plan', false),
                       set_config('idle_in_transaction_session_timeout', '0', false)
                """, logger: self.logger)
            try await connection.query("BEGIN", logger: self.logger)
        }
        while !isStopping {
            let result: (claimed: Int, processed: Int)
            do {
                result = try await runBatchWithDeadline(on: connection)
            } catch is CancellationError {
                // The shutdown budget ran out while this batch waited (see RelayServer.gracefulShutdownBudget).
                logger.warning("""
                    stopped before the batch in flight finished: it was rolled back, and its rows stay in the outbox \
                    for the next relay
                    """)
                throw CancellationError()
            }
            if result.processed > 0 {
                listener.reportBusy(gateID)
                // This worker looks again at once; others only when there may be more than one batch of work
                // (ringing every worker after every batch cost each one-row write several empty claims). A worker
                // that skipped rows of an activity this batch held looks again within 20 ms (below).
                listener.ringAfterBatch(from: gateID, full: result.claimed >= configuration.batchSize)
            } else if result.claimed > 0 {
                // Everything claimed belongs to activities another relay is sending right now.
                await doorbell.wait(timeout: min(poll, .milliseconds(20)))
            } else {
                listener.reportIdle(gateID)
                await doorbell.wait(timeout: poll)
            }
        }
    }

    /// Runs a batch that ends (rolled back) when the connection closes, the deadline passes or we are cancelled.
    private func runBatchWithDeadline(on connection: PostgresConnection) async throws -> (claimed: Int, processed: Int) {
        try await ConnectionScope.run(on: connection, deadline: batchDeadline, what: "running a delivery batch") {
            try await self.runBatch(on: connection)
        }
    }

    /// One batch: claim, lock activities, build, send, record, commit; then begin the next batch's transaction.
    ///
    /// The transaction is begun when the previous batch ends, not when a wake-up comes, so that a wake-up costs one
    /// round trip (the claim) before the push is on its way. Any error ends the connection (and the transaction).
    func runBatch(on connection: PostgresConnection) async throws -> (claimed: Int, processed: Int) {
        let result = try await batch(on: connection)
        try await connection.query("COMMIT", logger: logger)
        try await connection.query("BEGIN", logger: logger)
        return result
    }

    private func batch(on connection: PostgresConnection) async throws -> (claimed: Int, processed: Int) {
        let clock = ContinuousClock()
        let started = clock.now
        let claim = try await store.claim(limit: configuration.batchSize, on: connection)
        let rows = claim.rows
        guard !rows.isEmpty else { return (0, 0) }
        let plan = planner.plan(
            rows: rows, snapshots: claim.snapshots, lockedActivities: claim.lockedActivities, now: claim.now)
        let planned = clock.now

        var outcome = BatchOutcome()
        for settled in plan.settled {
            outcome.finishedRowIDs.append(settled.row.id)
            outcome.logs.append(DeliveryLogEntry(
                row: settled.row, status: settled.status, error: settled.reason, pushType: "liveactivity",
                environment: nil, token: nil, apnsStatus: nil, apnsReason: nil, latencyMilliseconds: nil))
        }
        let results = await sender.sendAll(plan.pushes)
        let sent = clock.now
        for (push, result) in zip(plan.pushes, results) {
            record(result, of: push, into: &outcome)
        }
        try await store.record(outcome, on: connection)
        logger.debug("batch", metadata: [
            "rows": "\(rows.count)", "pushes": "\(plan.pushes.count)", "read_ms": "\((planned - started).milliseconds)",
            "send_ms": "\((sent - planned).milliseconds)", "record_ms": "\((clock.now - sent).milliseconds)",
        ])
        if let metrics {
            for entry in outcome.logs {
                metrics.recordOutcome(status: entry.status, reason: entry.apnsReason)
                if let latency = entry.latencyMilliseconds, entry.status != "coalesced" {
                    metrics.recordCommitToAPNs(seconds: latency / 1000)
                }
            }
        }
        return (rows.count, plan.settled.count + plan.pushes.reduce(0) { $0 + $1.rows.count })
    }

    private func record(_ result: PushSender.Result, of push: DeliveryPlanner.Push, into outcome: inout BatchOutcome) {
        let newest = push.rows[0]
        let latency = (Date().timeIntervalSince1970 - newest.enqueuedAt) * 1000
        let request = push.request
        func log(_ row: OutboxRow, _ status: String, _ error: String?, response: APNsResponse?, environment: APNsEnvironment) -> DeliveryLogEntry {
            DeliveryLogEntry(
                row: row, status: status, error: error, pushType: request.pushType.rawValue, environment: environment.rawValue,
                token: request.deviceToken, apnsStatus: response?.status, apnsReason: response?.reason,
                latencyMilliseconds: row.id == newest.id ? latency : nil)
        }
        func finish(_ status: String, _ error: String?, response: APNsResponse?, environment: APNsEnvironment) {
            outcome.finishedRowIDs += push.rows.map(\.id)
            outcome.logs.append(log(newest, status, error, response: response, environment: environment))
            outcome.logs += push.rows.dropFirst().map { log($0, "coalesced", "superseded by outbox row \(newest.id)", response: nil, environment: environment) }
        }
        switch result.decision {
        case .sent:
            finish("sent", nil, response: result.response, environment: result.environment)
            if let activityID = push.activityID, let hash = push.stateHash {
                outcome.sentStates.append(.init(activityID: activityID, timestamp: push.timestamp, stateHash: hash))
            }
            if result.environment != request.environment {
                outcome.environmentChanges.append(.init(token: request.deviceToken, environment: result.environment))
            }
        case .invalidateToken, .tryOtherEnvironment:
            let reason = result.response?.reason ?? "InvalidToken"
            finish("failed", "token invalidated: \(reason)", response: result.response, environment: result.environment)
            logger.info("token invalidated", metadata: ["token": "\(redactedToken(request.deviceToken))", "reason": "\(reason)"])
            switch newest.kind {
            case .activity: if let id = push.activityID { outcome.deadActivityTokens.append((id, request.deviceToken)) }
            case .alert: outcome.deadDeviceTokens.append(request.deviceToken)
            case .start: outcome.deadStartTokens.append(request.deviceToken)
            }
        case .retry(let retryAfter):
            let attempts = push.rows.map(\.attempts).max() ?? 0
            let age = Date().timeIntervalSince1970 - (push.rows.map(\.enqueuedAt).min() ?? newest.enqueuedAt)
            let error = result.error ?? "APNs \(result.response?.status ?? 0) \(result.response?.reason ?? "")"
            if let delay = configuration.retry.nextDelay(
                afterAttempt: attempts + 1, ageSeconds: age, retryAfterSeconds: retryAfter, random: Double.random(in: 0...1)) {
                outcome.retries += push.rows.map { .init(rowID: $0.id, delaySeconds: delay, error: error) }
                outcome.logs.append(log(newest, "retrying", "\(error); next attempt in \(Int(delay * 1000)) ms",
                                        response: result.response, environment: result.environment))
            } else {
                finish("failed", "gave up after \(attempts + 1) attempts: \(error)", response: result.response, environment: result.environment)
            }
        case .refreshProviderToken, .fail:
            finish("failed", result.response?.reason ?? result.error ?? "rejected", response: result.response, environment: result.environment)
        }
    }
}


extension Duration {
    /// Whole and fractional milliseconds, for logs.
    var milliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }
}

/// A stop flag the delivery workers of one relay share (see `DeliveryWorker.run`).
public final class StopSignal: Sendable {
    private let stopped = Mutex(false)
    public init() {}
    public func stop() { stopped.withLock { $0 = true } }
    public var isStopped: Bool { stopped.withLock { $0 } }
}
