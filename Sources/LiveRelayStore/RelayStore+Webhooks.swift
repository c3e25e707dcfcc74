import Foundation
import LiveRelayCore
import PostgresNIO

/// A webhook endpoint as the admin API shows it; `secret` only in the answer that created it.
public struct WebhookEndpoint: Codable, Sendable, Equatable {
    public var id: String
    public var url: String
    public var events: [LifecycleEvent]
    public var enabled: Bool
    public var created_at: String
    public var secret: String?
    /// Events waiting for this endpoint (listings and changes), since when, why the event tried most often failed, and
    /// when the next retry is due (an enabled endpoint's).
    public var pending: Int?
    public var oldest_pending_at: String?
    public var last_error: String?
    public var next_attempt_at: String?
}

extension RelayStore {
    /// Registers an endpoint for `events` (all when empty); the secret is generated when not given (32 random bytes,
    /// hex). The caller has checked the URL may be reached.
    public func createWebhook(url: String, events: [LifecycleEvent], secret: String?) async throws -> WebhookEndpoint {
        let secret = secret ?? "whsec_" + randomHex(bytes: 32)
        let unique = Self.uniqueTypes(events.isEmpty ? LifecycleEvent.allCases : events)
        guard let text = try await values("""
            INSERT INTO webhook_endpoint (url, secret, events) VALUES (\(url), \(secret), \(unique)::text[])
            RETURNING json_build_object('id', id, 'url', url, 'events', events, 'enabled', enabled,
                                        'created_at', created_at, 'secret', secret)::text
            """, as: String.self).first else {
            throw StoreError.notFound("the new webhook endpoint was not found after writing it")
        }
        return try Self.decode(WebhookEndpoint.self, from: text)
    }

    /// An endpoint as the API lists it (`v` is the view `liverelay_webhooks`), with why the event tried most often
    /// failed and when the next retry is due.
    /// (These are read here, not added to the view: an older release's `sql/`, put back by a rollback, could not
    /// replace a view that has a column more than its own.)
    static let webhookJSON = """
        json_strip_nulls(json_build_object('id', v.id, 'url', v.url, 'events', v.events, 'enabled', v.enabled,
            'created_at', v.created_at, 'pending', v.pending, 'oldest_pending_at', v.oldest_pending_at,
            'last_error', (SELECT o.last_error FROM webhook_outbox o
                           WHERE o.endpoint_id = v.id AND o.last_error IS NOT NULL
                           ORDER BY o.attempts DESC, o.id LIMIT 1),
            'next_attempt_at', (SELECT min(o.next_attempt_at) FROM webhook_outbox o
                                WHERE v.enabled AND o.endpoint_id = v.id AND o.attempts > 0)))::text
        """

    /// Every endpoint, oldest first, without secrets, with what waits for it.
    public func webhooks() async throws -> [WebhookEndpoint] {
        try await records("""
            SELECT \(unescaped: Self.webhookJSON) FROM liverelay_webhooks v ORDER BY v.created_at, v.id
            """, as: WebhookEndpoint.self)
    }

    /// Pauses or resumes an endpoint (a paused one's events wait, and go out in order when it is resumed), or changes
    /// the events it receives (events already queued for it stay); nil leaves a field as it is. Answers the endpoint
    /// as `webhooks()` lists it.
    public func updateWebhook(_ id: UUID, enabled: Bool?, events: [LifecycleEvent]?) async throws -> WebhookEndpoint {
        let types = events.map { Self.uniqueTypes($0) }
        let changed = try await values("""
            UPDATE webhook_endpoint SET enabled = coalesce(\(enabled), enabled),
                                        events = coalesce(\(types)::text[], events)
            WHERE id = \(id) RETURNING id
            """, as: UUID.self)
        guard !changed.isEmpty else { throw Self.noWebhook(id) }
        // (Read after the change has committed: a view read in the UPDATE's own statement shows the row as it was.)
        let found = try await records("""
            SELECT \(unescaped: Self.webhookJSON) FROM liverelay_webhooks v WHERE v.id = \(id)
            """, as: WebhookEndpoint.self)
        guard let endpoint = found.first else { throw Self.noWebhook(id) }
        return endpoint
    }

    /// Deletes an endpoint and its events, without waiting for a worker that is sending some of them: a send in flight
    /// holds a lease (an advisory lock), not its row, so its row goes too and its outcome, when it comes, is dropped
    /// (never logged, never sent again). A worker's claim or record holds rows only for its one short statement; the
    /// DELETE waits for that rather than skipping them, so an event claimed at that moment is not left behind.
    public func deleteWebhook(_ id: UUID) async throws {
        let deleted = try await values("""
            WITH gone AS (DELETE FROM webhook_endpoint WHERE id = \(id) RETURNING id),
                 events AS (DELETE FROM webhook_outbox WHERE endpoint_id = \(id))
            SELECT id FROM gone
            """, as: UUID.self)
        guard !deleted.isEmpty else { throw Self.noWebhook(id) }
    }

    static func noWebhook(_ id: UUID) -> StoreError {
        .notFound("no webhook endpoint has id \(id.uuidString.lowercased())")
    }

    /// The event types' names, each once, in the order given.
    static func uniqueTypes(_ events: [LifecycleEvent]) -> [String] {
        let types = events.map(\.rawValue)
        return types.enumerated().filter { types.firstIndex(of: $0.element) == $0.offset }.map(\.element)
    }
}
