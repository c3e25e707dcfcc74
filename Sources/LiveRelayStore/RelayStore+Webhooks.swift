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
    /// Events waiting for this endpoint (listings only).
    public var pending: Int?
}

extension RelayStore {
    /// Registers an endpoint for `events` (all when empty); the secret is generated when not given (32 random bytes,
    /// hex). The caller has checked the URL may be reached.
    public func createWebhook(url: String, events: [LifecycleEvent], secret: String?) async throws -> WebhookEndpoint {
        let secret = secret ?? "whsec_" + randomHex(bytes: 32)
        let types = (events.isEmpty ? LifecycleEvent.allCases : events).map(\.rawValue)
        let unique = types.enumerated().filter { types.firstIndex(of: $0.element) == $0.offset }.map(\.element)
        guard let text = try await values("""
            INSERT INTO webhook_endpoint (url, secret, events) VALUES (\(url), \(secret), \(unique)::text[])
            RETURNING json_build_object('id', id, 'url', url, 'events', events, 'enabled', enabled,
                                        'created_at', created_at, 'secret', secret)::text
            """, as: String.self).first else {
            throw StoreError.notFound("the new webhook endpoint was not found after writing it")
        }
        return try Self.decode(WebhookEndpoint.self, from: text)
    }

    /// Every endpoint, oldest first, without secrets.
    public func webhooks() async throws -> [WebhookEndpoint] {
        try await records("""
            SELECT json_build_object('id', id, 'url', url, 'events', events, 'enabled', enabled,
                                     'created_at', created_at, 'pending', pending)::text
            FROM liverelay_webhooks ORDER BY created_at, id
            """, as: WebhookEndpoint.self)
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
        guard !deleted.isEmpty else { throw StoreError.notFound("no webhook endpoint has id \(id)") }
    }
}
