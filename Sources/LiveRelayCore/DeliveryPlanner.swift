import Crypto
import Foundation

/// Turns claimed outbox rows into deliveries, for any transport. Pure: the worker does the I/O.
///
/// Activity rows coalesce: all rows of one activity become one delivery of its current state (latest wins), and a
/// state identical to the one last sent is not sent again. The timestamp never decreases per activity.
public struct DeliveryPlanner: Sendable {
    /// One delivery to make, and the rows it settles.
    public struct Push: Sendable {
        public var delivery: Delivery
        /// The rows this push settles, newest first (the newest carries the outcome; the rest are coalesced).
        public var rows: [OutboxRow]
        /// SHA-256 of the content without its timestamp, stored to recognise a repeat.
        public var stateHash: String?
        public var event: OutboxEvent
        public var activityID: UUID? { delivery.activityID }
        public var timestamp: Int64 { delivery.timestamp }
    }

    /// Rows settled without a request.
    public struct Settled: Sendable {
        public var row: OutboxRow
        public var status: DeliveryStatus
        public var reason: SettleReason
        /// The broadcast channel of a channel row, when its name is known (for the log).
        public var channel: String? = nil
    }

    /// Why a row was settled without a request (its `delivery_log.error`).
    public enum SettleReason: String, Sendable, Hashable, CaseIterable {
        /// The row does not say what to send (no activity, token or payload where its kind needs one).
        case malformedOutboxRow = "MalformedOutboxRow"
        case activityDeleted = "ActivityDeleted"
        case tokenInvalidated = "TokenInvalidated"
        /// The activity has no update token yet: its state is sent when the token comes.
        case awaitingToken = "AwaitingToken"
        /// What this push would say was the last thing sent.
        case sameStateAlreadySent = "SameStateAlreadySent"
        /// The channel's row is gone, and this step needs it.
        case channelDeleted = "ChannelDeleted"
        /// The channel is no longer active (ended, deleted or failed): an update or create has nothing to do.
        case channelNotActive = "ChannelNotActive"
        /// Apple has not created the channel (yet): its creation queues what is due then.
        case awaitingChannel = "AwaitingChannel"
        case channelAlreadyCreated = "ChannelAlreadyCreated"
        /// An update while its app is open, under `ForegroundPolicy.skip` (pushed when the app leaves, if behind).
        case foreground = "Foreground"
        /// The widget token is no longer any device's (replaced, or found dead): nothing to reload.
        case widgetTokenUnregistered = "WidgetTokenUnregistered"
    }

    /// Rows put off without a request or a log row: due again after `delaySeconds` (a widget token's reload window).
    public struct Deferred: Sendable {
        public var row: OutboxRow
        public var delaySeconds: Double
    }

    public struct Plan: Sendable {
        public var pushes: [Push] = []
        public var settled: [Settled] = []
        /// Rows of locked channel chains left for the next batch (behind the step this batch takes).
        public var left = 0
        public var deferred: [Deferred] = []
    }

    /// Seconds a message stays deliverable (`apns-expiration`, FCM's `ttl`).
    public var liveActivityExpirationSeconds: Int64 = 3600
    public var alertExpirationSeconds: Int64 = 86_400
    /// The update budget: priority-10 pushes an activity may get an hour before its updates go at 5
    /// (`LIVERELAY_PRIORITY10_PER_HOUR`; doubled for activities with `frequent_updates`).
    public var priority10PerHour = UpdateBudget.defaultPerHour
    /// What an update does while its app is open (`LIVERELAY_FOREGROUND_PUSH`).
    public var foregroundPolicy = ForegroundPolicy.downgrade
    /// The least time between two reloads of one widget token (`LIVERELAY_WIDGET_MIN_INTERVAL`).
    public var widgetMinIntervalSeconds: Double = 60

    public init() {}

    /// - Parameters:
    ///   - rows: claimed rows; activity rows only of activities in `snapshots` or known to be gone.
    ///   - snapshots: the current state of each locked activity.
    ///   - lockedActivities: activities this worker may send now (others are left for later).
    ///   - now: epoch seconds from the database clock.
    ///   - channels, lockedChains: the state of the claimed rows' channels, and the chains this worker may send now.
    ///   - widgets: the state of each widget token whose rows this worker may send now.
    public func plan(rows: [OutboxRow], snapshots: [UUID: ActivitySnapshot], lockedActivities: Set<UUID>,
                     channels: [UUID: ChannelSnapshot] = [:], lockedChains: Set<ChannelChain> = [],
                     widgets: [String: WidgetState] = [:], now: Int64) -> Plan {
        var plan = Plan()
        planChannels(rows, channels: channels, lockedChains: lockedChains, now: now, into: &plan)
        planWidgets(rows, widgets: widgets, now: now, into: &plan)
        var byActivity: [UUID: [OutboxRow]] = [:]
        var activityOrder: [UUID] = []
        for row in rows {
            switch row.kind {
            case .activity:
                guard let activityID = row.activityID, lockedActivities.contains(activityID) else { continue }
                if byActivity[activityID] == nil { activityOrder.append(activityID) }
                byActivity[activityID, default: []].append(row)
            case .channel, .widget:
                continue
            case .alert, .start:
                if let push = directPush(row, now: now) {
                    plan.pushes.append(push)
                } else {
                    plan.settled.append(.init(row: row, status: .failed, reason: .malformedOutboxRow))
                }
            }
        }
        for activityID in activityOrder {
            let activityRows = byActivity[activityID]!.sorted { $0.id > $1.id }
            func settle(_ status: DeliveryStatus, _ reason: SettleReason) {
                plan.settled += activityRows.map { .init(row: $0, status: status, reason: reason) }
            }
            guard let snapshot = snapshots[activityID] else {
                settle(.failed, .activityDeleted)
                continue
            }
            guard snapshot.status != .invalidated else {
                settle(.failed, .tokenInvalidated)
                continue
            }
            // The state stays in the activity's row: the token's arrival queues a push of the latest one.
            guard let token = snapshot.activityToken else {
                settle(.coalesced, .awaitingToken)
                continue
            }
            // An Android activity created through the API begins with `start` (the app shows its notification then).
            let starts = snapshot.platform == .android && activityRows.contains { $0.event == .activity(.start) }
            let event: LiveActivityEvent = snapshot.status == .ended ? .end : starts ? .start : .update
            let content = LiveActivityContent(
                event: event, contentState: APNsPayload.mergingNote(snapshot.message, into: snapshot.contentState),
                staleDate: snapshot.staleDate, dismissalDate: snapshot.dismissalDate,
                relevanceScore: snapshot.relevanceScore,
                alert: activityRows.lazy.compactMap { $0.payload?.objectValue?["alert"] }.first)
            let stateHash = Self.stateHash(of: content, token: token)
            if stateHash == snapshot.lastPayloadHash {
                settle(.coalesced, .sameStateAlreadySent)
                continue
            }
            // The app shows this state itself: under `skip`, a plain update is not pushed at all.
            if foregroundPolicy == .skip, snapshot.foreground, event == .update, content.alert == nil {
                settle(.skipped, .foreground)
                continue
            }
            let requested = max(snapshot.priority, activityRows.compactMap(\.priority).max() ?? 0)
            let (priority, reason) = priority(of: content, requested: requested, snapshot: snapshot)
            var delivery = Delivery(
                platform: snapshot.platform, kind: .activity, token: token,
                content: .liveActivity(content), priority: priority, expiration: now + liveActivityExpirationSeconds,
                id: activityRows[0].apnsID,
                bundleID: snapshot.bundleID, environment: snapshot.environment, activityID: activityID,
                sessionID: activityRows[0].sessionID, timestamp: max(now, snapshot.lastTimestamp ?? 0))
            delivery.priorityReason = reason
            plan.pushes.append(
                Push(delivery: delivery, rows: activityRows, stateHash: stateHash, event: .activity(event)))
        }
        return plan
    }

    /// The priority of a Live Activity push, and why: `end`, a start and alert-carrying updates always go at 10;
    /// an update goes at the requested priority until the activity has had `priority10PerHour` priority-10 pushes
    /// in the last hour, then at 5 (APNs only: the budget is Apple's); while its app is open (`downgrade`), at 5.
    func priority(of content: LiveActivityContent, requested: Int, snapshot: ActivitySnapshot)
        -> (Int, PriorityReason) {
        switch content.event {
        case .end: return (10, .end)
        case .start: return (10, .start)
        case .update: break
        }
        if content.alert != nil { return (10, .alert) }
        guard requested >= 10 else { return (5, .requested) }
        let limit = priority10PerHour * (snapshot.frequentUpdates ? 2 : 1)
        if snapshot.platform == .ios && snapshot.priority10LastHour >= limit { return (5, .budget) }
        if foregroundPolicy == .downgrade && snapshot.foreground { return (5, .foreground) }
        return (10, .requested)
    }

    /// Identifies a state sent to a token (the APNs payload without its timestamp, the same for every transport, and
    /// the token: a new token has been sent nothing yet).
    static func stateHash(of content: LiveActivityContent, token: String) -> String {
        let payload = APNsPayload.liveActivity(
            event: content.event, timestamp: 0, contentState: content.contentState, staleDate: content.staleDate,
            dismissalDate: content.dismissalDate, relevanceScore: content.relevanceScore, alert: content.alert)
        return hexString(SHA256.hash(data: payload.compactBytes + Array(token.utf8)))
    }

    private func directPush(_ row: OutboxRow, now: Int64) -> Push? {
        guard let token = row.deviceToken, let bundleID = row.bundleID, let payload = row.payload else { return nil }
        var delivery = Delivery(
            platform: row.platform, kind: row.kind, token: token, content: .prepared(payload),
            priority: row.priority ?? 10,
            expiration: now + (row.kind == .start ? liveActivityExpirationSeconds : alertExpirationSeconds),
            id: row.apnsID, bundleID: bundleID, environment: row.environment ?? .production, sessionID: row.sessionID,
            timestamp: now)
        delivery.priorityReason = row.kind == .start ? .start : .requested
        return Push(delivery: delivery, rows: [row], stateHash: nil, event: row.event)
    }
}
