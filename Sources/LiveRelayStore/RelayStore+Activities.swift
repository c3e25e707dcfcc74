import Foundation
import LiveRelayCore
import Logging
import PostgresNIO

extension RelayStore {
    /// Activities created through the API live under this pairing-secret namespace.
    public static let apiNamespace = secretHash("liverelay-api")

    /// The newest `delivery_log` row matching `condition` that is not `coalesced`, else the newest of any status: a
    /// row folded into a push (a burst, or a state already sent) says less than the push itself, which may be older.
    static func lastOutcome(_ condition: String) -> String {
        """
        SELECT * FROM ((SELECT *, 0 AS rank FROM delivery_log WHERE \(condition) AND status <> 'coalesced'
                        ORDER BY id DESC LIMIT 1)
                       UNION ALL
                       (SELECT *, 1 AS rank FROM delivery_log WHERE \(condition) ORDER BY id DESC LIMIT 1)) newest
        ORDER BY rank LIMIT 1
        """
    }

    /// The `delivery_log` rows that are an activity's pushes: not the webhook requests its lifecycle events made,
    /// which carry its id too.
    static let pushesOfActivity = "activity_id = a.id AND transport IS DISTINCT FROM 'webhook'"

    /// One activity as JSON, with its last delivery and the pushes of the last hour (`a` is `activity_registration`).
    static let activityJSON = """
        json_build_object('id', a.id, 'sessionId', a.session_id, 'platform', a.platform, 'status', a.status,
            'activityType', a.attributes_type, 'attributes', a.attributes, 'contentState', a.content_state,
            'externalId', a.external_id, 'userId', a.user_id, 'deviceUUID', a.device_uuid, 'bundleId', a.bundle_id,
            'apnsEnv', a.apns_env, 'tokenSuffix', right(a.activity_token, 8), 'staleDate', a.stale_date,
            'dismissalDate', a.dismissal_date, 'priority', a.priority, 'createdAt', a.created_at,
            'updatedAt', a.updated_at, 'startedAt', a.started_at, 'frequentUpdates', a.frequent_updates,
            'awaitingToken', a.activity_token IS NULL,
            'priority10LastHour', (SELECT count(*) FROM activity_delivery_state s, unnest(s.priority10_sent_at) p(at)
                                   WHERE s.activity_id = a.id AND p.at > extract(epoch FROM now()) - 3600),
            'priority10Limit', liverelay_priority10_limit(a.frequent_updates),
            'foreground', liverelay_is_foreground(a.device_uuid, a.secret_hash, a.session_id),
            'lastDelivery', (SELECT json_build_object('status', l.status, 'eventType', l.event_type, 'at', l.created_at,
                                 'latencyMs', l.latency_ms, 'reason', coalesce(l.provider_reason, l.error))
                             FROM (\(lastOutcome(pushesOfActivity))) l),
            'pushesLastHour', (SELECT count(*) FROM delivery_log WHERE \(pushesOfActivity) AND status = 'sent'
                                   AND created_at > now() - interval '1 hour'))::text
        """

    /// Registers (or re-registers, by external id) an activity; an Android one with a content-state gets a `start`.
    public func createActivity(_ new: NewLiveActivity) async throws -> LiveActivity {
        let id = UUID()
        let session = new.externalID ?? "la_\(id.uuidString.lowercased())"
        let attributes = new.attributes.map(\.compactText), state = new.contentState.map(\.compactText)
        let platform = new.platform.rawValue, environment = new.environment.rawValue
        let text = try await withTransaction { connection in
            let created = try await Self.values("""
                WITH a AS (
                    INSERT INTO activity_registration (id, secret_hash, session_id, activity_token, bundle_id, apns_env,
                        platform, device_uuid, attributes_type, attributes, content_state, external_id, user_id,
                        frequent_updates)
                    VALUES (\(id), \(Self.apiNamespace), \(session), \(new.token), \(new.bundleID), \(environment),
                        \(platform), \(new.deviceUUID), \(new.activityType), \(attributes)::jsonb, \(state)::jsonb,
                        \(new.externalID), \(new.userID), \(new.frequentUpdates))
                    ON CONFLICT (secret_hash, session_id) DO UPDATE SET
                        activity_token = coalesce(excluded.activity_token, activity_registration.activity_token),
                        frequent_updates = excluded.frequent_updates,
                        status = 'active', content_state = coalesce(excluded.content_state,
                                                                    activity_registration.content_state)
                    RETURNING *)
                SELECT \(unescaped: Self.activityJSON) FROM a
                """, as: String.self, on: connection, logger: logger).first
            if new.platform == .android, state != nil {
                // An Android app shows its ongoing notification when a `start` message arrives (iOS activities are
                // started on the phone, or by push-to-start).
                try await connection.query(
                    "SELECT liverelay_queue_android_start(\(Self.apiNamespace), \(session))", logger: logger)
                try await connection.query("SELECT liverelay_wake()", logger: logger)
            }
            return created
        }
        guard let text else { throw StoreError.notFound("the new live activity was not found after writing it") }
        return try Self.decode(LiveActivity.self, from: text)
    }

    public func activities(_ filter: LiveActivityFilter) async throws -> [LiveActivity] {
        try Self.check(limit: filter.limit)
        guard filter.offset >= 0 else { throw StoreError.invalidArgument("offset must be a whole number ≥ 0") }
        let status = filter.status?.rawValue, platform = filter.platform?.rawValue
        return try await records("""
            SELECT \(unescaped: Self.activityJSON) FROM activity_registration a
            WHERE (\(status)::text IS NULL OR a.status = \(status))
              AND (\(platform)::text IS NULL OR a.platform = \(platform))
              AND (\(filter.externalID)::text IS NULL OR a.external_id = \(filter.externalID))
              AND (\(filter.userID)::text IS NULL OR a.user_id = \(filter.userID))
              AND (\(filter.deviceUUID)::uuid IS NULL OR a.device_uuid = \(filter.deviceUUID))
            ORDER BY a.created_at DESC, a.id LIMIT \(filter.limit) OFFSET \(filter.offset)
            """, as: LiveActivity.self)
    }

    public func activity(_ selector: ActivitySelector) async throws -> LiveActivity {
        let id = try await activityID(selector, activeOnly: false)
        guard let found = try await records(
            "SELECT \(unescaped: Self.activityJSON) FROM activity_registration a WHERE a.id = \(id)",
            as: LiveActivity.self).first else {
            throw StoreError.notFound("no \(selector)")
        }
        return found
    }

    /// Sets the content-state of an active activity: an `update` push, with the alert when given. `pushed` is false
    /// when the state was already that and no alert was given: such a write pushes nothing (as any SQL write of an
    /// unchanged state), and the answer says so.
    public func updateActivity(_ selector: ActivitySelector, _ update: LiveActivityUpdate) async throws
        -> (activity: LiveActivity, effect: UpdateEffect) {
        guard case .object = update.contentState else {
            throw StoreError.invalidArgument("content_state must be a JSON object, like {\"progress\": 0.5}")
        }
        let id = try await activityID(selector, activeOnly: true)
        let state = update.contentState.compactText, alert = update.alert?.compactText ?? ""
        let (activity, changes) = try await writeOne(selector, id: id) { [logger] connection in
            // The row is locked until the write commits, so what it holds now is what the UPDATE replaces.
            var changes = false
            for try await (differs, _) in try await connection.query("""
                SELECT content_state IS DISTINCT FROM \(state)::jsonb, set_config('liverelay.alert', \(alert), true)
                FROM activity_registration WHERE id = \(id) FOR UPDATE
                """, logger: logger).decode((Bool, String).self) {
                changes = differs
            }
            let query: PostgresQuery = """
                UPDATE activity_registration SET content_state = \(state)::jsonb,
                    stale_date = coalesce(\(update.staleDate), stale_date),
                    priority = coalesce(\(update.priority), priority),
                    relevance_score = coalesce(\(update.relevanceScore), relevance_score)
                WHERE id = \(id) AND status = 'active' RETURNING *
                """
            return (query, changes)
        }
        return (activity, changes || update.alert != nil ? .queued : .unchanged)
    }

    /// Ends an active activity: an `end` push, with the dismissal date when given.
    public func endActivity(_ selector: ActivitySelector, dismissalDate: Date? = nil) async throws -> LiveActivity {
        let id = try await activityID(selector, activeOnly: true)
        return try await writeOne(selector, id: id) { _ in
            ("""
            UPDATE activity_registration
            SET status = 'ended', dismissal_date = coalesce(\(dismissalDate), dismissal_date)
            WHERE id = \(id) AND status = 'active' RETURNING *
            """, ())
        }.activity
    }

    /// ActivityKit rotated the activity's push token: the next push goes to the new one (an invalidated row revives).
    public func rotateToken(_ id: UUID, to token: String) async throws -> LiveActivity {
        try await writeOne(.id(id), id: id) { _ in
            ("""
            UPDATE activity_registration SET activity_token = \(token),
                status = CASE WHEN status = 'invalidated' THEN 'active' ELSE status END
            WHERE id = \(id) RETURNING *
            """, ())
        }.activity
    }

    /// The row id a selector names. A session id may be registered under several pairing secrets: then it is
    /// ambiguous unless only one of those rows is active and `activeOnly` is asked.
    func activityID(_ selector: ActivitySelector, activeOnly: Bool) async throws -> UUID {
        // Each row's id and status, and how a person tells it from the others (its platform and device).
        let query: PostgresQuery = switch selector {
        case .id(let id): "SELECT id, status, platform, device_uuid FROM activity_registration WHERE id = \(id)"
        case .sessionID(let session):
            """
            SELECT id, status, platform, device_uuid FROM activity_registration WHERE session_id = \(session)
            ORDER BY updated_at DESC LIMIT 20
            """
        }
        typealias Row = (UUID, String, String, UUID?)
        let rows = try await withConnection { [logger] connection in
            var found: [Row] = []
            for try await row in try await connection.query(query, logger: logger).decode(Row.self) {
                found.append(row)
            }
            return found
        }
        let candidates = activeOnly ? rows.filter { $0.1 == ActivityStatus.active.rawValue } : rows
        guard let first = candidates.first else { throw Self.noActiveRow(selector, status: rows.first?.1) }
        guard candidates.count == 1 else {
            let listed = candidates.map { id, _, platform, device in
                let owner = device.map { ", device \($0.uuidString.lowercased())" } ?? ""
                return "\(id.uuidString.lowercased()) (\(platform)\(owner))"
            }
            throw StoreError.ambiguous("""
                \(candidates.count) live activities have that session_id: \(listed.joined(separator: ", ")); \
                give the id of one
                """)
        }
        return first.0
    }

    /// Runs the statement `prepare` returns for row `id` (it may read the row or set transaction settings first, and
    /// hand back what it learnt as `Found`) and answers the row it wrote. When it wrote none, the row was ended,
    /// invalidated or deleted since `activityID` read it (a relay invalidates a token while the request runs): that
    /// is said as `activityID` says it (`noActiveRow`).
    private func writeOne<Found: Sendable>(
        _ selector: ActivitySelector, id: UUID,
        _ prepare: @escaping @Sendable (PostgresConnection) async throws -> (PostgresQuery, Found)
    ) async throws -> (activity: LiveActivity, found: Found) {
        let (text, found) = try await withTransaction { [logger] connection in
            var (query, found) = try await prepare(connection)
            query.sql = "WITH a AS (\(query.sql)) SELECT \(Self.activityJSON) FROM a"
            if let written = try await Self.values(query, as: String.self, on: connection, logger: logger).first {
                return (written, found)
            }
            let status = try await Self.values(
                "SELECT status FROM activity_registration WHERE id = \(id)", as: String.self, on: connection,
                logger: logger
            ).first
            throw Self.noActiveRow(selector, status: status)
        }
        return (try Self.decode(LiveActivity.self, from: text), found)
    }

    /// Why no active row answers `selector`: none at all, or its row's `status` is not active.
    private static func noActiveRow(_ selector: ActivitySelector, status: String?) -> StoreError {
        guard let status else { return .notFound("no \(selector) (list_live_activities shows them)") }
        return .conflict("the \(selector) is \(status), not active")
    }
}
