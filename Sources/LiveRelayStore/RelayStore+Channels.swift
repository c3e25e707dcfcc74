import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

extension RelayStore {
    /// One channel as JSON, with its last send (`c` is `broadcast_channel`).
    static let channelJSON = """
        json_build_object('name', c.name, 'status', c.status, 'apnsChannelId', c.apns_channel_id,
            'fcmTopic', c.fcm_topic, 'contentState', c.content_state, 'bundleId', c.bundle_id, 'apnsEnv', c.apns_env,
            'storagePolicy', c.storage_policy, 'attributesType', c.attributes_type, 'priority', c.priority,
            'staleDate', c.stale_date, 'dismissalDate', c.dismissal_date, 'error', c.error,
            'platforms', CASE WHEN liverelay_fcm_enabled() THEN json_build_array('ios', 'android')
                              ELSE json_build_array('ios') END,
            'createdAt', c.created_at, 'updatedAt', c.updated_at,
            'lastSend', (SELECT json_build_object('eventType', l.event_type, 'status', l.status,
                                                  'transport', l.transport, 'at', l.created_at,
                                                  'latencyMs', l.latency_ms,
                                                  'reason', coalesce(l.provider_reason, l.error))
                         FROM (\(lastOutcome("channel = c.name"))) l))::text
        """

    public func channels(status: ChannelStatus? = nil, limit: Int = 100) async throws -> [BroadcastChannelRecord] {
        try Self.check(limit: limit)
        let status = status?.rawValue
        return try await records("""
            SELECT \(unescaped: Self.channelJSON) FROM broadcast_channel c
            WHERE (\(status)::text IS NULL OR c.status = \(status)) ORDER BY c.name LIMIT \(limit)
            """, as: BroadcastChannelRecord.self)
    }

    public func channel(named name: String) async throws -> BroadcastChannelRecord {
        let found = try await records("""
            SELECT \(unescaped: Self.channelJSON) FROM broadcast_channel c WHERE c.name = \(name)
            """, as: BroadcastChannelRecord.self)
        guard let channel = found.first else { throw Self.noChannel(named: name) }
        return channel
    }

    /// The refusal for a name no row has.
    static func noChannel(named name: String) -> StoreError {
        .notFound("there is no channel named \(name.excerpt)")
    }

    /// Why a name cannot be created: the channel that has it, and for one that is over (deleted or failed, whose row
    /// stays with its history) how to free the name.
    static func takenName(_ name: String, status: ChannelStatus?) -> String {
        guard let status, status == .deleted || status == .failed else {
            return "a channel named \(name) exists already"
        }
        return "a channel named \(name) exists already (\(status.rawValue); its row keeps its history): choose another "
            + "name, or free this one with DELETE FROM broadcast_channel WHERE name = '\(name)'"
    }

    /// Which of `names` are channels (rows of `broadcast_channel`, whatever their status).
    public func existingChannels(among names: [String]) async throws -> Set<String> {
        Set(try await values("SELECT name FROM broadcast_channel WHERE name = ANY(\(names))", as: String.self))
    }

    /// Inserts the row (the relay then creates the channel at Apple); a taken name is a conflict.
    public func createChannel(_ new: NewChannel) async throws -> BroadcastChannelRecord {
        let state = new.contentState.map(\.compactText), environment = new.environment?.rawValue
        let policy = new.storagePolicy.map(Int16.init), priority = new.priority.map(Int16.init)
        do {
            try await execute("""
                INSERT INTO broadcast_channel (name, bundle_id, apns_env, storage_policy, attributes_type,
                                               content_state, priority)
                VALUES (\(new.name), \(new.bundleID), coalesce(\(environment), 'production'),
                        coalesce(\(policy), 0::smallint), \(new.attributesType), \(state)::jsonb,
                        coalesce(\(priority), 10::smallint))
                """)
        } catch StoreError.conflict {
            // (withConnection has made the unique violation a StoreError already.)
            let status = try await values(
                "SELECT status FROM broadcast_channel WHERE name = \(new.name)", as: String.self).first
            throw StoreError.conflict(Self.takenName(new.name, status: status.flatMap(ChannelStatus.init)))
        }
        return try await channel(named: new.name)
    }

    /// Changes what is given; the triggers send what the change calls for. Answers the channel as written, the status
    /// it had and what the change sends (only a changed state of an active channel, or its end or deletion), in one
    /// statement.
    public func updateChannel(named name: String, _ change: ChannelChange) async throws
        -> (channel: BroadcastChannelRecord, previousStatus: ChannelStatus, effect: UpdateEffect) {
        struct Found: Decodable {
            let channel: BroadcastChannelRecord, previousStatus: ChannelStatus, stateChanged: Bool
        }
        let state = change.contentState.map(\.compactText), status = change.status?.rawValue
        let priority = change.priority.map(Int16.init)
        // The row is locked by the read in FROM, so what it held there is what the UPDATE replaces.
        let found = try await records("""
            UPDATE broadcast_channel c SET
                content_state = coalesce(\(state)::jsonb, c.content_state), status = coalesce(\(status), c.status),
                stale_date = coalesce(to_timestamp(\(change.staleDate)::float8), c.stale_date),
                dismissal_date = coalesce(to_timestamp(\(change.dismissalDate)::float8), c.dismissal_date),
                priority = coalesce(\(priority), c.priority)
            FROM (SELECT id, status AS old_status, content_state AS old_state FROM broadcast_channel
                  WHERE name = \(name) FOR UPDATE) o
            WHERE c.id = o.id
            RETURNING json_build_object('channel', (\(unescaped: Self.channelJSON))::json,
                                        'previousStatus', o.old_status,
                                        'stateChanged', c.content_state IS DISTINCT FROM o.old_state)::text
            """, as: Found.self)
        guard let first = found.first else { throw Self.noChannel(named: name) }
        let effect = UpdateEffect.channel(
            before: first.previousStatus, after: first.channel.status, stateChanged: first.stateChanged)
        return (first.channel, first.previousStatus, effect)
    }

    /// Queues push-to-start of activities that follow the channel on the given devices; says how many, and which
    /// devices got none and why, in one statement (the start first: it refuses a channel that cannot start).
    public func startChannel(named name: String, devices: [UUID], attributes: JSONValue?, alert: JSONValue?)
        async throws -> ChannelStart {
        struct Found: Decodable {
            let queued: Int, attributesType: String?, notQueued: [Miss]
        }
        struct Miss: Decodable {
            let deviceUUID: String, reason: ChannelStart.Reason
        }
        do {
            let found = try await records("""
                SELECT json_build_object(
                    'queued', liverelay_start_channel(\(name), \(devices)::uuid[],
                                                      \(attributes.map(\.compactText))::jsonb,
                                                      \(alert.map(\.compactText))::jsonb),
                    'attributesType', c.attributes_type,
                    'notQueued', (SELECT coalesce(json_agg(json_build_object('deviceUUID', m.device_uuid,
                                                                             'reason', m.reason)), '[]')
                                  FROM liverelay_channel_start_misses(c.attributes_type, \(devices)::uuid[]) m))::text
                FROM broadcast_channel c WHERE c.name = \(name)
                """, as: Found.self)
            guard let first = found.first else { throw Self.noChannel(named: name) }
            return ChannelStart(queued: first.queued, notQueued: first.notQueued.map {
                .init(deviceUUID: $0.deviceUUID, reason: $0.reason,
                      message: $0.reason.message(attributesType: first.attributesType))
            })
        } catch let error as PSQLError {
            let message = error.serverInfo?[.message] ?? "the channel cannot be started"
            switch error.serverInfo?[.sqlState] {
            case "P0002": throw StoreError.notFound(message)
            case "55000": throw StoreError.conflict(message)
            case "22023": throw StoreError.invalidArgument(message)
            default: throw error
            }
        }
    }
}
