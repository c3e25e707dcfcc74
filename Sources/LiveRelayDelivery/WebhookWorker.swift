import Foundation
import LiveRelayCore
import LiveRelayMetrics
import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle

/// Delivers lifecycle events to webhook endpoints: claims due `webhook_outbox` rows chain by chain (one endpoint, one
/// activity), sends each chain in order, stopping at its first failure, and records each chain's outcomes as soon as
/// the chain is done.
///
/// A claimed chain is leased by a session-level lock (sql/037_webhook_queue.sql), not by a transaction: claim, record
/// and unlock are each one short statement, so an endpoint that hangs holds only its own chains and never the events
/// of another endpoint, and the worker goes on claiming while some chains are still being sent. At least once: a crash
/// before a chain is recorded ends the session and its locks, and the rows are sent again with the same
/// `LiveRelay-Event-Id`.
public final class WebhookWorker: Service, Sendable {
    private let connector: DatabaseConnector
    private let listener: WakeupListener
    private let sender: any WebhookSender
    private let store: WebhookOutboxStore
    private let retry: RetryPolicy
    private let batchSize: Int
    private let poll: Duration
    private let metrics: RelayMetrics?
    private let logger: Logger
    private let doorbell: Doorbell

    public init(connector: DatabaseConnector, listener: WakeupListener, sender: any WebhookSender,
                configuration: DeliveryConfiguration, metrics: RelayMetrics? = nil, logger: Logger) {
        self.connector = connector
        self.listener = listener
        self.sender = sender
        self.store = WebhookOutboxStore(logger: logger)
        // Receivers are retried for a day: from 0.5 s, doubling up to the push retries' longest delay.
        self.retry = RetryPolicy(initialDelaySeconds: 0.5, maximumDelaySeconds: configuration.retry.maximumDelaySeconds,
                                 maximumAttempts: .max, maximumAgeSeconds: 86_400)
        self.batchSize = configuration.batchSize
        self.poll = .milliseconds(configuration.pollIntervalMilliseconds)
        self.metrics = metrics
        self.logger = logger
        self.doorbell = listener.registerWebhookWorker()
    }

    /// The longest an idle worker sleeps without being rung (a backstop: an endpoint enabled again rings it).
    static let idleBackstop = Duration.seconds(5)

    /// How many requests one worker has in flight to one endpoint (two workers: the client's 32 connections).
    static let lanesPerEndpoint = 16

    /// A woken worker claims at most once this long (`ClaimPacing`): the events of a busy moment gather meanwhile.
    static let gathering = Duration.milliseconds(50)

    /// How many claimed rows may wait unrecorded before the worker stops claiming.
    private var maximumBusyRows: Int { batchSize * 4 }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.connector.runReconnecting(
                role: "webhook worker", logger: self.logger,
                shouldStop: { Task.isCancelled || Task.isShuttingDownGracefully }
            ) { connection in
                try await self.drain(on: connection)
            }
        }
        logger.debug("webhook worker stopped")
    }

    /// What a lane hands the recorder: a chain's outcomes (possibly none, for a chain not sent).
    private struct Finished: Sendable {
        var chain: WebhookOutboxStore.Chain
        var outcomes: [WebhookOutboxStore.Outcome]
        var eventTypes: [Int64: String]
    }

    private func drain(on connection: PostgresConnection) async throws {
        _ = try await ConnectionScope.run(on: connection, deadline: .seconds(5), what: "configuring") {
            try await connection.query("SELECT set_config('synchronous_commit', 'off', false)", logger: self.logger)
        }
        let lanes = WebhookLanes(lanesPerEndpoint: Self.lanesPerEndpoint)
        // Lanes put each finished chain in the mailbox; one recorder takes them (all that finished meanwhile at once).
        let mailbox = Mailbox<Finished>()
        try await withThrowingTaskGroup(of: Void.self) { recorder in
            recorder.addTask { try await self.record(mailbox, lanes: lanes, on: connection) }
            do {
                try await withThrowingTaskGroup(of: Void.self) { senders in
                    try await self.claimLoop(lanes: lanes, senders: &senders, recorder: mailbox, on: connection)
                    // Stopping: chains not started yet are unlocked unsent; those in flight finish and are recorded.
                    for chain in lanes.stop() { mailbox.put(Finished(chain: chain, outcomes: [], eventTypes: [:])) }
                    try await senders.waitForAll()
                }
            } catch {
                mailbox.finish()
                recorder.cancelAll()
                throw error
            }
            mailbox.finish()
            try await recorder.waitForAll()
        }
    }

    /// Claims while there is work and room, starting lanes for new chains, until the worker stops.
    private func claimLoop(lanes: WebhookLanes, senders: inout ThrowingTaskGroup<Void, any Error>,
                           recorder: Mailbox<Finished>, on connection: PostgresConnection)
        async throws {
        let clock = ContinuousClock()
        var previousClaim: ContinuousClock.Instant?
        // As the delivery workers: a first batch after a wait, full batches while there is more (`BatchLimit`).
        var waited = true
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let limit = BatchLimit.rows(batchSize: batchSize, afterWait: waited)
            let room = min(limit, maximumBusyRows - lanes.busyRows)
            var claimed = 0
            if room > 0 {
                let busy = lanes.busyChains
                previousClaim = clock.now
                let rows = try await ConnectionScope.run(
                    on: connection, deadline: .seconds(10), what: "a webhook claim"
                ) {
                    try await self.store.claim(limit: room, excluding: busy, on: connection)
                }
                claimed = rows.count
                if !rows.isEmpty { try await start(rows, lanes: lanes, senders: &senders, recorder: recorder) }
            }
            // A full claim: there may be more at once.
            waited = claimed < limit
            if !waited { continue }
            // Not part of the wake-up gate (the delivery workers are): it is rung when webhook rows were queued (a
            // `webhooks` notification, or this relay's delivery batch) and when a chain it sent is recorded.
            // Otherwise it sleeps until the next retry is due, at most `idleBackstop`; rows due but not claimable
            // (being sent, or another worker holds their chain) are looked at again after the poll interval.
            let due = try await ConnectionScope.run(on: connection, deadline: .seconds(5), what: "a webhook due time") {
                try await self.store.secondsUntilDue(on: connection)
            }
            let wait: Duration = switch due {
            case nil: Self.idleBackstop
            case let seconds? where seconds <= 0: poll
            case let seconds?: min(.milliseconds(Int64(seconds * 1000) + 1), Self.idleBackstop)
            }
            await doorbell.wait(timeout: wait)
            let sincePrevious = previousClaim.map { clock.now - $0 }
            let pause = ClaimPacing.pause(sincePreviousClaim: sincePrevious, window: Self.gathering)
            if pause > .zero { try? await Task.sleep(for: pause) }
        }
    }

    /// Hands the claimed chains to their endpoints' lanes, starting lanes where there is room.
    private func start(_ rows: [WebhookOutboxStore.Row], lanes: WebhookLanes,
                       senders: inout ThrowingTaskGroup<Void, any Error>,
                       recorder: Mailbox<Finished>) async throws {
        var chains: [WebhookOutboxStore.Chain: [WebhookOutboxStore.Row]] = [:]
        var order: [WebhookOutboxStore.Chain] = []
        for row in rows {
            let chain = WebhookOutboxStore.Chain(endpoint: row.endpointID, activity: row.activityID)
            if chains[chain] == nil { order.append(chain) }
            chains[chain, default: []].append(row)
        }
        // Each endpoint's address is checked once a claim (a name may resolve somewhere else than when registered), by
        // its own lanes: a slow lookup holds up only its endpoint.
        let checks = EndpointChecks(sender: sender)
        for chain in order {
            guard let endpoint = lanes.add(chains[chain]!) else { continue }
            senders.addTask {
                while let chainRows = lanes.next(for: endpoint) {
                    var outcomes: [WebhookOutboxStore.Outcome] = []
                    for row in chainRows {
                        let outcome = await self.deliver(row, refusal: await checks.refusal(of: row.request.url))
                        outcomes.append(outcome)
                        // The rest of the chain waits behind a row that was not delivered.
                        if outcome.status == .retrying { break }
                    }
                    let first = chainRows[0]
                    recorder.put(Finished(
                        chain: .init(endpoint: first.endpointID, activity: first.activityID), outcomes: outcomes,
                        eventTypes: Dictionary(chainRows.map { ($0.id, $0.eventType) },
                                               uniquingKeysWith: { first, _ in first })))
                }
            }
        }
    }

    /// Records finished chains as they come, those that finished meanwhile together in one statement, then ends
    /// their leases and rings the worker (their activities may have more events waiting).
    private func record(_ finished: Mailbox<Finished>, lanes: WebhookLanes,
                        on connection: PostgresConnection) async throws {
        while let pending = await finished.takeAll() {
            let outcomes = pending.flatMap(\.outcomes)
            let chains = pending.map(\.chain)
            let clock = ContinuousClock()
            let started = clock.now
            try await ConnectionScope.run(on: connection, deadline: .seconds(10), what: "recording webhooks") {
                try await self.store.record(outcomes, on: connection)
                try await self.store.unlock(chains, on: connection)
            }
            lanes.release(chains)
            doorbell.ring()
            logger.debug("webhook outcomes recorded", metadata: [
                "chains": "\(chains.count)", "rows": "\(outcomes.count)",
                "record_ms": "\((clock.now - started).milliseconds)",
            ])
            if let metrics {
                for item in pending {
                    for outcome in item.outcomes {
                        metrics.recordWebhook(status: outcome.status, eventType: item.eventTypes[outcome.rowID] ?? "",
                                              latencySeconds: outcome.latencyMilliseconds.map { $0 / 1000 })
                    }
                }
            }
        }
    }

    private func deliver(_ row: WebhookOutboxStore.Row, refusal: String?) async -> WebhookOutboxStore.Outcome {
        let result: WebhookResult
        if let refusal {
            result = WebhookResult(delivered: false, error: "not sent: \(refusal)")
        } else {
            result = await sender.send(row.request)
        }
        let now = Date().timeIntervalSince1970
        if result.delivered {
            return .init(rowID: row.id, status: .sent, error: nil, httpStatus: result.httpStatus,
                         latencyMilliseconds: (now - row.enqueuedAt) * 1000)
        }
        let cause = result.error ?? "not delivered"
        let decision = retry.decide(
            attempts: row.attempts, enqueuedAt: row.enqueuedAt, now: now, retryAfterSeconds: result.retryAfterSeconds,
            random: .random(in: 0...1), error: cause)
        switch decision {
        case .retry(let delay, let note):
            return .init(rowID: row.id, status: .retrying, error: note, httpStatus: result.httpStatus,
                         latencyMilliseconds: nil, retryDelaySeconds: delay, retryCause: cause)
        case .giveUp(let note):
            logger.warning("webhook given up after a day of retries", metadata: [
                "event_id": "\(row.request.eventID)", "endpoint": "\(row.endpointID)",
            ])
            return .init(rowID: row.id, status: .failed, error: note, httpStatus: result.httpStatus,
                         latencyMilliseconds: nil)
        }
    }
}
