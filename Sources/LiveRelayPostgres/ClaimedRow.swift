import Foundation
import LiveRelayCore
import PostgresNIO

/// One row of `liverelay_claim_deliveries` (sql/040_delivery.sql), by name: the outbox row, whether this worker holds
/// the lock of its activity, channel side or widget token, and the state it read of each (present only when it holds
/// the lock).
///
/// The columns are decoded in the function's `RETURNS TABLE` order in one typed decode (`init(_:)`), the one place
/// that order is written on this side; everything after works with names.
struct ClaimedRow {
    var row: OutboxRow
    /// The database clock, epoch seconds.
    var databaseNow: Int64
    /// This worker holds the lock the row needs (its activity's, its channel side's or its widget token's).
    var locked: Bool
    /// The state of the row's activity, when locked and the activity still exists. Built when asked (its content is
    /// parsed then): the claim returns an activity's state beside each of its rows, and the store reads it once.
    var activity: ActivitySnapshot? { activityColumns?.snapshot }
    private var activityColumns: ActivityColumns?
    /// The row's channel as JSON (`ChannelSnapshot(claimed:platform:)`), when locked and the channel still exists.
    var channelState: String?
    /// For a widget row whose token is locked: whether a device still has the token, and the seconds since its last
    /// reload (nil when never).
    var widgetRegistered: Bool
    var widgetIdleSeconds: Double?

    init(_ postgres: PostgresRow) throws {
        let (id, kindText, rowPlatform, activityID, eventType, secretHash, sessionID, deviceToken, bundleID,
             environment, payload, priority, apnsID, requestID, enqueuedAt, attempts, databaseNow, locked,
             snapshotID, token, snapshotBundle, snapshotEnvironment, status, contentState, stale, dismissal,
             relevance, snapshotPriority, hasMessage, message, lastTimestamp, lastPayload, platform,
             frequentUpdates, priority10LastHour, channelID, channelState, foreground, widgetRegistered,
             widgetIdle) = try postgres.decode(Columns.self)
        let kind = OutboxRow.Kind(rawValue: kindText) ?? .alert
        row = OutboxRow(
            id: id, kind: kind, platform: Platform(rawValue: rowPlatform) ?? .ios, activityID: activityID,
            event: OutboxEvent(kind: kind, text: eventType), secretHash: secretHash, sessionID: sessionID,
            deviceToken: deviceToken, bundleID: bundleID, environment: environment.flatMap(APNsEnvironment.init),
            payload: payload.flatMap { try? JSONValue(parsing: $0) }, priority: priority.map(Int.init), apnsID: apnsID,
            requestID: requestID, enqueuedAt: enqueuedAt, attempts: Int(attempts), channelID: channelID)
        self.databaseNow = databaseNow
        self.locked = locked
        if locked, let activityID, snapshotID != nil, let snapshotBundle,
           let status = status.flatMap(ActivityStatus.init(rawValue:)) {
            activityColumns = ActivityColumns(
                id: activityID, token: token, bundleID: snapshotBundle, environment: snapshotEnvironment,
                status: status, platform: platform, contentState: contentState, stale: stale, dismissal: dismissal,
                relevance: relevance, priority: snapshotPriority, message: hasMessage ? (message ?? "") : nil,
                lastTimestamp: lastTimestamp, lastPayload: lastPayload, frequentUpdates: frequentUpdates,
                priority10LastHour: priority10LastHour, foreground: foreground)
        }
        self.channelState = channelState
        self.widgetRegistered = widgetRegistered
        widgetIdleSeconds = widgetIdle
    }

    /// An activity's state as the claim returned it, not yet parsed.
    private struct ActivityColumns {
        var id: UUID, token: String?, bundleID: String, environment: String?, status: ActivityStatus
        var platform: String?, contentState: String?, stale: Int64?, dismissal: Int64?, relevance: Double?
        var priority: Int32?, message: String?, lastTimestamp: Int64?, lastPayload: String?
        var frequentUpdates: Bool, priority10LastHour: Int32, foreground: Bool

        var snapshot: ActivitySnapshot {
            ActivitySnapshot(
                id: id, activityToken: token, bundleID: bundleID,
                environment: environment.flatMap(APNsEnvironment.init(rawValue:)) ?? .production,
                status: status, platform: platform.flatMap(Platform.init(rawValue:)) ?? .ios,
                contentState: contentState.flatMap { try? JSONValue(parsing: $0) }, staleDate: stale,
                dismissalDate: dismissal, relevanceScore: relevance, priority: Int(priority ?? 10), message: message,
                lastTimestamp: lastTimestamp, lastPayloadHash: lastPayload, frequentUpdates: frequentUpdates,
                priority10LastHour: Int(priority10LastHour), foreground: foreground)
        }
    }

    /// The function's columns, in order: the outbox row (id … attempts), the clock and the lock, the activity's state
    /// (id … priority10_last_hour), the channel (channel_id, channel_state), presence and the widget token's state.
    typealias Columns = (Int64, String, String, UUID?, String, String?, String?, String?, String?, String?, String?,
                         Int32?, UUID, UUID?, Double, Int32, Int64, Bool,
                         UUID?, String?, String?, String?, String?, String?, Int64?, Int64?, Double?, Int32?, Bool,
                         String?, Int64?, String?, String?, Bool, Int32,
                         UUID?, String?, Bool, Bool, Double?)
}
