import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle

/// Delivers lifecycle events to webhook endpoints: claims due `webhook_outbox` rows, sends each chain (one endpoint,
/// one activity) in order, stopping at its first failure, and records every outcome, one transaction per batch.
///
/// At least once: a crash before the batch commits leaves its rows in the outbox, and they are sent again with the
/// same `LiveRelay-Event-Id`.
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

    /// How long a batch keeps starting requests; a chain not finished by then waits for the next batch.
    static let sendingBudget = Duration.seconds(20)

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

    /// The longest an idle worker sleeps without being rung (an endpoint enabled again by SQL is seen by then).
    static let idleBackstop = Duration.seconds(5)

    /// How many requests one worker has in flight to one endpoint (two workers: the client's 32 connections).
    static let lanesPerEndpoint = 16

    /// How long a worker that was woken waits for more events before it claims.
    static let gathering = Duration.milliseconds(50)

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

    private func drain(on connection: PostgresConnection) async throws {
        _ = try await ConnectionScope.run(on: connection, deadline: .seconds(5), what: "configuring") {
            try await connection.query("SELECT set_config('synchronous_commit', 'off', false)", logger: self.logger)
        }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let sent = try await ConnectionScope.run(on: connection, deadline: .seconds(60), what: "a webhook batch") {
                try await self.batch(on: connection)
            }
            // A full batch: there may be more at once.
            guard sent < batchSize else { continue }
            // Not part of the wake-up gate (the delivery workers are): it is rung when webhook rows were queued (a
            // `webhooks` notification, or this relay's delivery batch). Otherwise it sleeps until the next retry is
            // due, at most `idleBackstop`; rows due but not claimable (another worker holds their chain) are looked
            // at again after the poll interval.
            let due = try await ConnectionScope.run(on: connection, deadline: .seconds(5), what: "a webhook due time") {
                try await self.store.secondsUntilDue(on: connection)
            }
            let wait: Duration = switch due {
            case nil: Self.idleBackstop
            case let seconds? where seconds <= 0: poll
            case let seconds?: min(.milliseconds(Int64(seconds * 1000) + 1), Self.idleBackstop)
            }
            await doorbell.wait(timeout: wait)
            // Let the events of a busy moment gather into one batch: one claim and one record for many rather than
            // per delivery batch (at 400 pushes/s that was a webhook transaction every few milliseconds, which cost
            // the pushes' latency). Receivers get events at most this much later.
            try? await Task.sleep(for: Self.gathering)
        }
    }

    /// One batch in one transaction; returns how many rows it settled or rescheduled.
    func batch(on connection: PostgresConnection) async throws -> Int {
        let clock = ContinuousClock()
        let begun = clock.now
        try await connection.query("BEGIN", logger: logger)
        let rows = try await store.claim(limit: batchSize, on: connection)
        guard !rows.isEmpty else {
            try await connection.query("COMMIT", logger: logger)
            return 0
        }
        let claimed = clock.now
        let outcomes = await send(rows)
        let sent = clock.now
        try await store.record(outcomes, on: connection)
        try await connection.query("COMMIT", logger: logger)
        logger.debug("webhook batch", metadata: [
            "rows": "\(rows.count)", "claim_ms": "\((claimed - begun).milliseconds)",
            "send_ms": "\((sent - claimed).milliseconds)",
            "record_ms": "\((clock.now - sent).milliseconds)",
        ])
        if let metrics {
            let types = Dictionary(rows.map { ($0.id, $0.eventType) }, uniquingKeysWith: { first, _ in first })
            for outcome in outcomes {
                metrics.recordWebhook(status: outcome.status, eventType: types[outcome.rowID] ?? "",
                                      latencySeconds: outcome.latencyMilliseconds.map { $0 / 1000 })
            }
        }
        return outcomes.count
    }

    /// Sends every chain side by side, each chain's rows one after another.
    private func send(_ rows: [WebhookOutboxStore.Row]) async -> [WebhookOutboxStore.Outcome] {
        struct Chain: Hashable { var endpoint: UUID, activity: UUID }
        var chains: [Chain: [WebhookOutboxStore.Row]] = [:]
        var order: [Chain] = []
        for row in rows {
            let chain = Chain(endpoint: row.endpointID, activity: row.activityID)
            if chains[chain] == nil { order.append(chain) }
            chains[chain, default: []].append(row)
        }
        // Each endpoint's address is checked once a batch (a name may resolve somewhere else than when registered).
        var refusals: [String: String?] = [:]
        for url in Set(rows.map(\.request.url)) { refusals[url] = await sender.refusal(of: url) }
        let started = ContinuousClock.now
        let checked = refusals
        return await withTaskGroup(of: [WebhookOutboxStore.Outcome].self) { group in
            // A few lanes per endpoint, each taking the next waiting chain: no more requests in flight than the
            // client has connections (queued requests cost timers and bookkeeping), and a slow endpoint holds up
            // only its own lanes.
            for endpointChains in Dictionary(grouping: order, by: \.endpoint).values {
                let queue = WorkQueue(endpointChains.map { chains[$0]! })
                for _ in 0..<min(Self.lanesPerEndpoint, endpointChains.count) {
                    group.addTask {
                        var outcomes: [WebhookOutboxStore.Outcome] = []
                        chains: while let chainRows = queue.next() {
                            for row in chainRows {
                                guard ContinuousClock.now - started < Self.sendingBudget else { break chains }
                                let outcome = await self.deliver(row, refusal: checked[row.request.url] ?? nil)
                                outcomes.append(outcome)
                                // The rest of the chain waits behind a row that was not delivered.
                                if outcome.status == .retrying { break }
                            }
                        }
                        return outcomes
                    }
                }
            }
            var all: [WebhookOutboxStore.Outcome] = []
            for await outcomes in group { all += outcomes }
            return all
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
        let error = result.error ?? "not delivered"
        if let delay = retry.nextDelay(afterAttempt: row.attempts + 1, ageSeconds: now - row.enqueuedAt,
                                       retryAfterSeconds: result.retryAfterSeconds, random: .random(in: 0...1)) {
            return .init(rowID: row.id, status: .retrying, error: "\(error); next attempt in \(Int(delay * 1000)) ms",
                         httpStatus: result.httpStatus, latencyMilliseconds: nil, retryDelaySeconds: delay)
        }
        logger.warning("webhook given up after a day of retries", metadata: [
            "event_id": "\(row.request.eventID)", "endpoint": "\(row.endpointID)",
        ])
        return .init(rowID: row.id, status: .failed, error: "gave up after \(row.attempts + 1) attempts: \(error)",
                     httpStatus: result.httpStatus, latencyMilliseconds: nil)
    }
}
