import Foundation
import LiveRelayCore
import PostgresNIO

/// The statement that records a batch: `liverelay_record_batch(...)` and, for a batch with channel outcomes,
/// `liverelay_record_channels(...)` beside it, so that a batch's outcomes take one round trip whatever it held
/// (sql/042_outcomes.sql, sql/052_channel_outcomes.sql). Arrays run in parallel, one element per row; what a row lacks
/// (no activity, no answer, no latency) is NULL.
struct RecordCall {
    private var text = PostgresQuery.StringInterpolation(literalCapacity: 2048, interpolationCount: 50)
    private var calls = 0

    var query: PostgresQuery { PostgresQuery(stringInterpolation: text) }

    /// The call's text for a batch without channel outcomes, or with them: one text per shape, whatever the batch
    /// holds (every argument is an array), which is what lets `RecordBatchStatement` and `RecordChannelsStatement` be
    /// prepared.
    static func text(withChannels: Bool) -> String {
        var call = RecordCall()
        call.batch(BatchOutcome())
        if withChannels { call.channels(BatchOutcome()) }
        return call.query.sql
    }

    /// The activity side: log rows, finished and rescheduled rows, what was sent.
    mutating func batch(_ outcome: BatchOutcome) {
        let logs = outcome.logs.filter { $0.channel == nil }
        let retries = outcome.retries, sent = outcome.sentStates
        open("liverelay_record_batch")
        argument(NullableArray(logs.map(\.secretHash)), "text[]")
        argument(logs.map(\.eventType), "text[]")
        argument(NullableArray(logs.map(\.sessionID)), "text[]")
        argument(logs.map(\.status.rawValue), "text[]")
        argument(NullableArray(logs.map(\.error)), "text[]")
        argument(logs.map(\.outboxID), "int8[]")
        argument(NullableArray(logs.map { $0.activityID?.uuidString }), "text[]")
        argument(NullableArray(logs.map { $0.pushType?.rawValue }), "text[]")
        argument(NullableArray(logs.map { $0.environment?.rawValue }), "text[]")
        argument(NullableArray(logs.map(\.tokenSuffix)), "text[]")
        argument(logs.map(\.apnsID), "uuid[]")
        argument(NullableArray(logs.map { $0.providerStatus.map(Int32.init) }), "int4[]")
        argument(NullableArray(logs.map(\.providerReason)), "text[]")
        argument(logs.map { Int32($0.attempt) }, "int4[]")
        argument(NullableArray(logs.map(\.latencyMilliseconds)), "float8[]")
        argument(NullableArray(logs.map { $0.requestID?.uuidString }), "text[]")
        argument(NullableArray(logs.map { $0.transport?.rawValue }), "text[]")
        argument(NullableArray(logs.map { $0.priority.map(Int32.init) }), "int4[]")
        argument(NullableArray(logs.map { $0.priorityReason?.rawValue }), "text[]")
        argument(NullableArray(logs.map { $0.lifecycle?.rawValue }), "text[]")
        argument(outcome.finishedRowIDs, "int8[]")
        argument(retries.map(\.rowID), "int8[]")
        argument(retries.map { Int64($0.delaySeconds * 1000) }, "int8[]")
        argument(retries.map(\.error), "text[]")
        argument(sent.map(\.activityID), "uuid[]")
        argument(sent.map(\.timestamp), "int8[]")
        argument(sent.map(\.stateHash), "text[]")
        argument(sent.map(\.priority10), "bool[]", last: true)
    }

    /// The channel side: log rows with their channel, channels created and failed, what each side sent.
    mutating func channels(_ outcome: BatchOutcome) {
        let logs = outcome.logs.filter { $0.channel != nil }
        let created = outcome.createdChannels, failed = outcome.failedChannels, sent = outcome.channelSentStates
        open("liverelay_record_channels")
        argument(logs.compactMap(\.channel), "text[]")
        argument(logs.map { ($0.channelSide ?? .ios).rawValue }, "text[]")
        argument(logs.map(\.eventType), "text[]")
        argument(logs.map(\.status.rawValue), "text[]")
        argument(NullableArray(logs.map(\.error)), "text[]")
        argument(logs.map(\.outboxID), "int8[]")
        argument(NullableArray(logs.map { $0.providerStatus.map(Int32.init) }), "int4[]")
        argument(NullableArray(logs.map(\.providerReason)), "text[]")
        argument(logs.map { Int32($0.attempt) }, "int4[]")
        argument(NullableArray(logs.map(\.latencyMilliseconds)), "float8[]")
        argument(NullableArray(logs.map { $0.requestID?.uuidString }), "text[]")
        argument(NullableArray(logs.map { $0.priority.map(Int32.init) }), "int4[]")
        argument(logs.map { $0.transport != nil }, "bool[]")
        argument(created.map(\.channelID), "uuid[]")
        argument(created.map(\.apnsChannelID), "text[]")
        argument(created.map(\.bundleID), "text[]")
        argument(created.map(\.environment.rawValue), "text[]")
        argument(failed.map(\.channelID), "uuid[]")
        argument(failed.map(\.error), "text[]")
        argument(sent.map(\.chain.channelID), "uuid[]")
        argument(sent.map(\.chain.platform.rawValue), "text[]")
        argument(sent.map(\.timestamp), "int8[]")
        argument(sent.map(\.stateHash), "text[]", last: true)
    }

    private mutating func open(_ function: String) {
        text.appendLiteral((calls == 0 ? "SELECT " : ", ") + function + "(")
        calls += 1
    }

    private mutating func argument<Value: PostgresDynamicTypeEncodable>(_ value: Value, _ type: String,
                                                                         last: Bool = false) {
        text.appendInterpolation(value)
        text.appendLiteral("::" + type + (last ? ")" : ", "))
    }
}
