import Foundation
import LiveRelayCore
import LiveRelayPostgres

/// How a batch records each push's answer, as a pure function of the push, the answer, the time and a random number:
/// finished, retried with backoff, a dead token retired, an environment learnt, a lifecycle event. The delivery
/// worker calls it with the clock and the random source; tests call it with their own.
struct OutcomeRecorder: Sendable {
    let retry: RetryPolicy
    /// The transports this relay has; a push for another was never sent (no transport in its log row).
    let configured: Set<TransportKind>

    /// A token the answer declared dead, for the worker's log line.
    struct DeadToken: Equatable {
        var token: String
        var reason: String
        var transport: TransportKind
    }

    /// Adds what `result` means for `push` to `outcome`; `now` in epoch seconds, `random` in 0...1 (retry jitter).
    @discardableResult
    func record(_ result: DeliveryResult, of push: DeliveryPlanner.Push, now: Double, random: Double,
                into outcome: inout BatchOutcome) -> DeadToken? {
        let newest = push.rows[0]
        let latency = (now - newest.enqueuedAt) * 1000
        let delivery = push.delivery
        let transport = delivery.platform.transport
        let isConfigured = configured.contains(transport)
        let channel: ChannelMessage? = if case .channel(let message) = delivery.content { message } else { nil }
        func log(_ row: OutboxRow, _ status: DeliveryStatus, _ error: String?, answered: Bool) -> DeliveryLogEntry {
            var entry = DeliveryLogEntry(
                row: row, status: status, error: error, transport: isConfigured ? transport : nil,
                pushType: result.pushType, environment: result.environment, token: delivery.token,
                providerStatus: answered ? result.providerStatus : nil,
                providerReason: answered ? result.providerReason : nil,
                latencyMilliseconds: row.id == newest.id && isConfigured ? latency : nil)
            if row.id == newest.id {
                entry.priority = delivery.priority
                entry.priorityReason = delivery.priorityReason
            }
            if let channel {
                entry.channel = channel.name
                entry.channelSide = delivery.platform
            }
            return entry
        }
        func finish(_ status: DeliveryStatus, _ error: String?, deadToken: Bool = false) {
            outcome.finishedRowIDs += push.rows.map(\.id)
            var entry = log(newest, status, error, answered: true)
            if newest.activityID != nil {
                entry.lifecycle = LifecycleEvent.forOutcome(
                    kind: newest.kind, event: push.event.liveActivityEvent, status: status,
                    deadToken: deadToken)
            }
            outcome.logs.append(entry)
            outcome.logs += push.rows.dropFirst().map {
                log($0, .coalesced, "superseded by outbox row \(newest.id)", answered: false)
            }
        }
        func retryLater(after retryAfter: Double?, error: String) {
            let decision = retry.decide(
                attempts: push.rows.map(\.attempts).max() ?? 0,
                enqueuedAt: push.rows.map(\.enqueuedAt).min() ?? newest.enqueuedAt, now: now,
                retryAfterSeconds: retryAfter, random: random, error: error)
            switch decision {
            case .retry(let delay, let note):
                outcome.retries += push.rows.map { .init(rowID: $0.id, delaySeconds: delay, error: error) }
                outcome.logs.append(log(newest, .retrying, note, answered: true))
            case .giveUp(let note):
                finish(.failed, note)
            }
        }
        let answer = result.providerStatus.map {
            "\(transport.rawValue.uppercased()) \($0) \(result.providerReason ?? "")"
        }
        switch result.outcome {
        case .delivered:
            finish(.sent, nil)
            if let channel {
                recordChannelSent(channel, push: push, result: result, into: &outcome)
                return nil
            }
            if newest.kind == .widget { outcome.widgetReloads.append(delivery.token) }
            if let activityID = push.activityID, let hash = push.stateHash {
                outcome.sentStates.append(.init(activityID: activityID, timestamp: push.timestamp, stateHash: hash,
                                                priority10: delivery.priority >= 10))
            }
            if let environment = result.environment, environment != delivery.environment {
                outcome.environmentChanges.append(.init(token: delivery.token, environment: environment))
            }
        case .deadToken where channel != nil:
            // Apple no longer knows the channel: it is failed, and nothing is sent on it again. (FCM has no channel
            // to lose: its refusal fails that message only.)
            let reason = result.providerReason ?? "ChannelNotRegistered"
            finish(.failed, transport == .apns ? "channel gone: \(reason)" : reason)
            if let channel, transport == .apns, channel.step != .delete {
                outcome.failedChannels.append(.init(channelID: channel.channelID, error: reason))
            }
        case .deadToken:
            let reason = result.providerReason ?? "InvalidToken"
            finish(.failed, "token invalidated: \(reason)", deadToken: true)
            switch newest.kind {
            case .activity:
                if let id = push.activityID {
                    outcome.deadActivityTokens.append(.init(
                        activityID: id, token: delivery.token, transport: transport, reason: reason,
                        latencyMilliseconds: latency))
                }
            case .alert: outcome.deadDeviceTokens.append(delivery.token)
            case .start: outcome.deadStartTokens.append(delivery.token)
            case .widget: outcome.deadWidgetTokens.append(delivery.token)
            case .channel: break
            }
            return DeadToken(token: delivery.token, reason: reason, transport: transport)
        case .retry(let retryAfter):
            retryLater(after: retryAfter, error: result.error ?? answer ?? "no answer")
        case .credentialsRejected:
            // The service refused the relay's credentials (a wrong or revoked key, a clock far off), fresh ones
            // included: the message is fine, so it waits with backoff for the operator to fix them.
            retryLater(after: nil, error: "\(answer ?? "refused"): the relay's credentials were refused; fix the key")
        case .rejected:
            let reason = result.providerReason ?? result.error ?? answer ?? "rejected"
            finish(.failed, reason)
            // Apple refused a channel's step: the channel is failed (an FCM refusal fails only that message).
            if let channel, transport == .apns, result.providerStatus != nil, channel.step != .delete {
                outcome.failedChannels.append(.init(channelID: channel.channelID, error: reason))
            }
        }
        return nil
    }

    /// A channel step that was done: a created channel's id, or what an update or end sent.
    private func recordChannelSent(_ channel: ChannelMessage, push: DeliveryPlanner.Push, result: DeliveryResult,
                                   into outcome: inout BatchOutcome) {
        switch channel.step {
        case .create:
            if let id = result.apnsChannelID {
                outcome.createdChannels.append(.init(
                    channelID: channel.channelID, apnsChannelID: id, bundleID: push.delivery.bundleID,
                    environment: push.delivery.environment))
            }
        case .update, .end:
            if let hash = push.stateHash {
                outcome.channelSentStates.append(.init(
                    chain: ChannelChain(channelID: channel.channelID, platform: push.delivery.platform),
                    timestamp: push.timestamp, stateHash: hash))
            }
        case .delete:
            break
        }
    }
}
