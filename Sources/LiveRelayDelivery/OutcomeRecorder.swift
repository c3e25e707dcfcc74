import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging

/// How a batch records each push's answer: finished, retried with backoff, a dead token retired, a lifecycle event.
extension DeliveryWorker {
    func record(_ result: DeliveryResult, of push: DeliveryPlanner.Push, into outcome: inout BatchOutcome) {
        let newest = push.rows[0]
        let latency = (Date().timeIntervalSince1970 - newest.enqueuedAt) * 1000
        let delivery = push.delivery
        let transport = delivery.platform.transport
        let configured = transports[transport] != nil
        func log(_ row: OutboxRow, _ status: DeliveryStatus, _ error: String?, answered: Bool) -> DeliveryLogEntry {
            DeliveryLogEntry(
                row: row, status: status, error: error, transport: configured ? transport : nil,
                pushType: result.pushType, environment: result.environment, token: delivery.token,
                providerStatus: answered ? result.providerStatus : nil,
                providerReason: answered ? result.providerReason : nil,
                latencyMilliseconds: row.id == newest.id && configured ? latency : nil)
        }
        func finish(_ status: DeliveryStatus, _ error: String?, deadToken: Bool = false) {
            outcome.finishedRowIDs += push.rows.map(\.id)
            var entry = log(newest, status, error, answered: true)
            entry.priority = delivery.priority
            entry.priorityReason = delivery.priorityReason
            if newest.activityID != nil {
                entry.lifecycle = LifecycleEvent.forOutcome(
                    kind: newest.kind, event: LiveActivityEvent(rawValue: push.eventType), status: status,
                    deadToken: deadToken)
            }
            outcome.logs.append(entry)
            outcome.logs += push.rows.dropFirst().map {
                log($0, .coalesced, "superseded by outbox row \(newest.id)", answered: false)
            }
        }
        let answer = result.providerStatus.map {
            "\(transport.rawValue.uppercased()) \($0) \(result.providerReason ?? "")"
        }
        func retry(after retryAfter: Double?, error: String) {
            let attempts = push.rows.map(\.attempts).max() ?? 0
            let age = Date().timeIntervalSince1970 - (push.rows.map(\.enqueuedAt).min() ?? newest.enqueuedAt)
            if let delay = configuration.retry.nextDelay(
                afterAttempt: attempts + 1, ageSeconds: age, retryAfterSeconds: retryAfter,
                random: Double.random(in: 0...1)) {
                outcome.retries += push.rows.map { .init(rowID: $0.id, delaySeconds: delay, error: error) }
                let next = "\(error); next attempt in \(Int(delay * 1000)) ms"
                var entry = log(newest, .retrying, next, answered: true)
                entry.priority = delivery.priority
                entry.priorityReason = delivery.priorityReason
                outcome.logs.append(entry)
            } else {
                finish(.failed, "gave up after \(attempts + 1) attempts: \(error)")
            }
        }
        switch result.outcome {
        case .delivered:
            finish(.sent, nil)
            if let activityID = push.activityID, let hash = push.stateHash {
                outcome.sentStates.append(.init(activityID: activityID, timestamp: push.timestamp, stateHash: hash,
                                                priority10: delivery.priority >= 10))
            }
            if let environment = result.environment, environment != delivery.environment {
                outcome.environmentChanges.append(.init(token: delivery.token, environment: environment))
            }
        case .deadToken:
            let reason = result.providerReason ?? "InvalidToken"
            finish(.failed, "token invalidated: \(reason)", deadToken: true)
            logger.info("token invalidated", metadata: [
                "token": "\(redactedToken(delivery.token))", "reason": "\(reason)",
                "transport": "\(transport.rawValue)",
            ])
            switch newest.kind {
            case .activity:
                if let id = push.activityID {
                    outcome.deadActivityTokens.append(.init(
                        activityID: id, token: delivery.token, transport: transport, reason: reason,
                        latencyMilliseconds: latency))
                }
            case .alert: outcome.deadDeviceTokens.append(delivery.token)
            case .start: outcome.deadStartTokens.append(delivery.token)
            }
        case .retry(let retryAfter):
            retry(after: retryAfter, error: result.error ?? answer ?? "no answer")
        case .credentialsRejected:
            // The service refused credentials minted a moment ago (a revoked key, a clock far off): the message is
            // fine, so it waits with backoff for the operator to fix the credentials rather than being dropped.
            retry(after: nil, error: "\(answer ?? "refused"): credentials refused even after minting new ones")
        case .rejected:
            finish(.failed, result.providerReason ?? result.error ?? answer ?? "rejected")
        }
    }
}
