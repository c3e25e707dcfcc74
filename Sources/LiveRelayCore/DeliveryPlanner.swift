import Crypto
import Foundation

/// Turns claimed outbox rows into APNs requests. Pure: the worker does the I/O.
///
/// Activity rows coalesce: all rows of one activity become one push of its current state (latest wins), and a
/// state identical to the one last sent is not sent again. `aps.timestamp` never decreases per activity.
public struct DeliveryPlanner: Sendable {
    /// One request to make, and the rows it settles.
    public struct Push: Sendable {
        public var request: PushRequest
        /// The rows this push settles, newest first (the newest carries the outcome; the rest are coalesced).
        public var rows: [OutboxRow]
        public var activityID: UUID?
        public var timestamp: Int64
        /// SHA-256 of the payload without its timestamp, stored to recognise a repeat.
        public var stateHash: String?
        public var eventType: String
    }

    /// Rows settled without a request.
    public struct Settled: Sendable {
        public var row: OutboxRow
        public var status: String
        public var reason: String
    }

    public struct Plan: Sendable {
        public var pushes: [Push] = []
        public var settled: [Settled] = []
    }

    /// Seconds a push stays deliverable at APNs (`apns-expiration`).
    public var liveActivityExpirationSeconds: Int64 = 3600
    public var alertExpirationSeconds: Int64 = 86_400

    public init() {}

    /// - Parameters:
    ///   - rows: claimed rows; activity rows only of activities in `snapshots` or known to be gone.
    ///   - snapshots: the current state of each locked activity.
    ///   - lockedActivities: activities this worker may send now (others are left for later).
    ///   - now: epoch seconds from the database clock.
    public func plan(rows: [OutboxRow], snapshots: [UUID: ActivitySnapshot], lockedActivities: Set<UUID>, now: Int64) -> Plan {
        var plan = Plan()
        var byActivity: [UUID: [OutboxRow]] = [:]
        var activityOrder: [UUID] = []
        for row in rows {
            switch row.kind {
            case .activity:
                guard let activityID = row.activityID, lockedActivities.contains(activityID) else { continue }
                if byActivity[activityID] == nil { activityOrder.append(activityID) }
                byActivity[activityID, default: []].append(row)
            case .alert, .start:
                if let push = directPush(row, now: now) {
                    plan.pushes.append(push)
                } else {
                    plan.settled.append(.init(row: row, status: "failed", reason: "MalformedOutboxRow"))
                }
            }
        }
        for activityID in activityOrder {
            let activityRows = byActivity[activityID]!.sorted { $0.id > $1.id }
            guard let snapshot = snapshots[activityID] else {
                plan.settled += activityRows.map { .init(row: $0, status: "failed", reason: "ActivityDeleted") }
                continue
            }
            guard snapshot.platform == "ios" else {
                plan.settled += activityRows.map { .init(row: $0, status: "failed", reason: "AndroidDeliveryNotAvailable") }
                continue
            }
            guard snapshot.status == "active" || snapshot.status == "ended" else {
                plan.settled += activityRows.map { .init(row: $0, status: "failed", reason: "TokenInvalidated") }
                continue
            }
            let event: LiveActivityEvent = snapshot.status == "ended" ? .end : .update
            let contentState = APNsPayload.mergingNote(snapshot.message, into: snapshot.contentState)
            let alert = activityRows.lazy.compactMap { $0.payload?.objectValue?["alert"] }.first
            func payload(timestamp: Int64) -> JSONValue {
                APNsPayload.liveActivity(
                    event: event, timestamp: timestamp, contentState: contentState, staleDate: snapshot.staleDate,
                    dismissalDate: snapshot.dismissalDate, relevanceScore: snapshot.relevanceScore, alert: alert)
            }
            let stateHash = hexString(SHA256.hash(data: payload(timestamp: 0).compactBytes))
            if stateHash == snapshot.lastPayloadHash {
                plan.settled += activityRows.map { .init(row: $0, status: "coalesced", reason: "SameStateAlreadySent") }
                continue
            }
            let timestamp = max(now, snapshot.lastTimestamp ?? 0)
            let priority = event == .end || alert != nil ? 10 : max(snapshot.priority, activityRows.compactMap(\.priority).max() ?? 0)
            let newest = activityRows[0]
            let request = PushRequest(
                deviceToken: snapshot.activityToken, environment: snapshot.environment, bundleID: snapshot.bundleID,
                pushType: .liveactivity, priority: priority, expiration: now + liveActivityExpirationSeconds,
                apnsID: newest.apnsID, payload: payload(timestamp: timestamp).compactBytes)
            plan.pushes.append(Push(
                request: request, rows: activityRows, activityID: activityID, timestamp: timestamp,
                stateHash: stateHash, eventType: event.rawValue))
        }
        return plan
    }

    private func directPush(_ row: OutboxRow, now: Int64) -> Push? {
        guard let token = row.deviceToken, let bundleID = row.bundleID, var payload = row.payload else { return nil }
        let pushType: PushType = row.kind == .start ? .liveactivity : .alert
        if row.kind == .start { payload = APNsPayload.settingTimestamp(now, in: payload) }
        let request = PushRequest(
            deviceToken: token, environment: row.environment ?? .production, bundleID: bundleID, pushType: pushType,
            priority: row.priority ?? 10,
            expiration: now + (row.kind == .start ? liveActivityExpirationSeconds : alertExpirationSeconds),
            apnsID: row.apnsID, payload: payload.compactBytes)
        return Push(request: request, rows: [row], activityID: nil, timestamp: now, stateHash: nil, eventType: row.eventType)
    }
}
