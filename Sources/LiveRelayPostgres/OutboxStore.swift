import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

/// The delivery workers' SQL: claim due rows, lock activities, read their state, record outcomes.
/// Every call runs inside the worker's batch transaction; row locks and activity locks end with it.
public struct OutboxStore: Sendable {
    public let logger: Logger

    public init(logger: Logger) { self.logger = logger }

    /// What one claim returns.
    public struct Claim: Sendable {
        public var rows: [OutboxRow] = []
        /// Epoch seconds from the database clock.
        public var now: Int64 = 0
        /// Activities this worker holds the per-activity lock of (others are being sent by another worker).
        public var lockedActivities: Set<UUID> = []
        /// The current state of each locked activity (absent when the activity was deleted).
        public var snapshots: [UUID: ActivitySnapshot] = [:]
        /// Channel chains this worker holds the lock of, and their channels' state (absent when deleted).
        public var lockedChains: Set<ChannelChain> = []
        public var channels: [UUID: ChannelSnapshot] = [:]
        /// Widget tokens this worker holds the lock of, with their state.
        public var widgets: [String: WidgetState] = [:]

        public init() {}
    }

    /// In one statement (one round trip, `liverelay_claim_deliveries` in sql/040_delivery.sql): locks up to `limit` due
    /// rows no other worker holds, takes the per-activity advisory lock of each of their activities it can (one sender
    /// per activity across all relays), and reads those activities' state with the device's message and what was last
    /// sent (in a snapshot taken after the locks). Its plans are made once per session and cannot go stale (see the
    /// function's comment).
    public func claim(limit: Int, on connection: PostgresConnection) async throws -> Claim {
        // A prepared statement: parsed once per connection, not once per batch.
        try await decode(try await connection.execute(ClaimStatement(limit: Int64(limit)), logger: logger))
    }

    /// The same as `claim(limit:on:)` for the given rows only, found by primary key: the rows a writer's wake-up
    /// named. Rows another worker holds or that are not due are left out.
    public func claim(ids: [Int64], on connection: PostgresConnection) async throws -> Claim {
        try await decode(try await connection.execute(ClaimByIDsStatement(ids: ids), logger: logger))
    }

    private func decode(_ stream: AsyncThrowingMapSequence<PostgresRowSequence, ClaimedRow>) async throws -> Claim {
        var claim = Claim()
        claim.now = Int64(Date().timeIntervalSince1970)
        for try await claimed in stream {
            let row = claimed.row
            claim.now = claimed.databaseNow
            claim.rows.append(row)
            guard claimed.locked else { continue }
            switch row.kind {
            case .channel:
                guard let channelID = row.channelID else { break }
                claim.lockedChains.insert(ChannelChain(channelID: channelID, platform: row.platform))
                if let text = claimed.channelState, let state = try? JSONValue(parsing: text),
                   let snapshot = ChannelSnapshot(claimed: state, platform: row.platform) {
                    if claim.channels[channelID] == nil { claim.channels[channelID] = snapshot }
                    claim.channels[channelID]?.merge(snapshot, platform: row.platform)
                }
            case .widget:
                if let token = row.deviceToken {
                    claim.widgets[token] = WidgetState(
                        registered: claimed.widgetRegistered, secondsSinceReload: claimed.widgetIdleSeconds)
                }
            case .activity, .alert, .start:
                break
            }
            guard let activityID = row.activityID else { continue }
            claim.lockedActivities.insert(activityID)
            if claim.snapshots[activityID] == nil, let snapshot = claimed.activity {
                claim.snapshots[activityID] = snapshot
            }
        }
        return claim
    }

    /// Writes a batch's outcomes: log rows, removed and rescheduled outbox rows, what was sent
    /// (`liverelay_record_batch`, one round trip), and, when the batch learnt any, dead tokens and tokens of the
    /// other APNs environment (`liverelay_retire_tokens`, `liverelay_move_tokens`). See sql/042_outcomes.sql.
    /// Returns how many webhook rows the batch's lifecycle events queued, and how many outbox rows its channel
    /// outcomes queued (a created channel's latest state).
    @discardableResult
    public func record(_ outcome: BatchOutcome, on connection: PostgresConnection) async throws
        -> (webhooks: Int, channelRows: Int) {
        var call = RecordCall()
        call.batch(outcome)
        var queuedWebhooks = 0, queuedChannelRows = 0
        if outcome.hasChannelOutcomes {
            call.channels(outcome)
            let statement = RecordChannelsStatement(bindings: call.query.binds)
            for try await (webhooks, channelRows) in try await connection.execute(statement, logger: logger) {
                (queuedWebhooks, queuedChannelRows) = (Int(webhooks), Int(channelRows))
            }
        } else {
            let statement = RecordBatchStatement(bindings: call.query.binds)
            for try await count in try await connection.execute(statement, logger: logger) {
                queuedWebhooks = Int(count)
            }
        }
        if outcome.learntDeadTokens {
            let dead = outcome.deadActivityTokens
            try await connection.query("""
                SELECT liverelay_retire_tokens(\(dead.map(\.activityID))::uuid[], \(dead.map(\.token))::text[],
                    \(dead.map(\.transport.rawValue))::text[], \(dead.map(\.reason))::text[],
                    \(NullableArray(dead.map(\.latencyMilliseconds)))::float8[],
                    \(outcome.deadDeviceTokens)::text[], \(outcome.deadStartTokens)::text[])
                """, logger: logger)
        }
        if outcome.hasWidgetOutcomes {
            let deferred = outcome.deferredWidgetRows
            try await connection.query("""
                SELECT liverelay_record_widgets(\(outcome.widgetReloads)::text[], \(outcome.deadWidgetTokens)::text[],
                    \(deferred.map(\.rowID))::int8[], \(deferred.map { Int64($0.delaySeconds * 1000) })::int8[])
                """, logger: logger)
        }
        if !outcome.environmentChanges.isEmpty {
            try await connection.query("""
                SELECT liverelay_move_tokens(\(outcome.environmentChanges.map(\.token))::text[],
                    \(outcome.environmentChanges.map(\.environment.rawValue))::text[])
                """, logger: logger)
        }
        return (queuedWebhooks, queuedChannelRows)
    }
}

/// The claim query (see `OutboxStore.claim`).
struct ClaimStatement: PostgresPreparedStatement {
    typealias Row = ClaimedRow
    static let name = "liverelay_claim_v9"
    static let sql = "SELECT * FROM liverelay_claim_deliveries($1::int4, NULL)"
    var limit: Int64

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(limit)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> ClaimedRow {
        try ClaimedRow(row)
    }
}

/// The claim of given rows (see `OutboxStore.claim(ids:on:)`); its rows are the general claim's.
struct ClaimByIDsStatement: PostgresPreparedStatement {
    typealias Row = ClaimedRow
    static let name = "liverelay_claim_ids_v4"
    static let sql = "SELECT * FROM liverelay_claim_deliveries($1::int4, $2::int8[])"
    var ids: [Int64]

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(Int32(ids.count))
        bindings.append(ids)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> ClaimedRow {
        try ClaimedRow(row)
    }
}
