import LiveRelayCore
import Logging
import PostgresNIO

/// The relay's rows in `relay_setting`, written at start-up on a connection of its own (before the pool runs).
/// Every relay of a database reads the same rows, so the one that started last decides them for all.
public enum RelaySettings {
    /// A shared setting that this relay's start-up changed: another relay of the database (or this one's last
    /// start) had published `before`.
    public struct Change: Sendable, Equatable {
        public var name: String
        public var before: String
        public var after: String?
        public init(name: String, before: String, after: String?) {
            self.name = name
            self.before = before
            self.after = after
        }
    }

    /// A row of `relay_setting` as the relay's configuration gives it; a nil value removes the row.
    public typealias Row = (name: String, value: String?)

    /// The update budget and its warning level, where the views read them (`liverelay_priority10_limit`,
    /// `liverelay_priority10_warning`), and the widget reload window, where the triggers that queue reloads read it
    /// (sql/027_widgets.sql).
    public static func deliveryRows(priority10PerHour perHour: Int, widgetIntervalSeconds seconds: Double) -> [Row] {
        [("priority10_per_hour", String(perHour)), ("priority10_warning", String(UpdateBudget.warningAt)),
         ("widget_min_interval_seconds", String(seconds))]
    }

    /// What a write to `broadcast_channel` takes from the relay's configuration (sql/050_channels.sql).
    public struct ChannelDefaults: Sendable {
        /// `APNS_DEFAULT_BUNDLE_ID`: the bundle of channels written without one.
        public var bundleID: String?
        /// FCM is configured: channel writes queue topic messages too.
        public var fcmEnabled: Bool
        public init(bundleID: String?, fcmEnabled: Bool) {
            self.bundleID = bundleID
            self.fcmEnabled = fcmEnabled
        }

        /// An unset bundle removes its row.
        public var rows: [Row] { [("fcm_enabled", fcmEnabled ? "true" : "false"), ("default_bundle_id", bundleID)] }
    }

    /// The row that records a digest of the secret this relay signs device tokens with: when the relay that started
    /// before it recorded another, tokens one mints the other refuses. (Only the digest is kept, beside the generated
    /// secret the database holds anyway; neither is logged.)
    public static func tokenSecretDigestRow(of secret: String) -> Row {
        (tokenSecretDigest, sha256Hex("liverelay device-token secret:" + secret))
    }

    public static let tokenSecretDigest = "token_secret_digest"

    /// Writes `rows` in one statement and answers those that held another value before it (`before` reads the rows as
    /// they were; PostgreSQL runs the data-modifying CTEs to completion whether or not the query reads them).
    public static func publish(_ rows: [Row], on connection: PostgresConnection, logger: Logger) async throws
        -> [Change] {
        let set = rows.compactMap { row in row.value.map { (row.name, $0) } }
        let removed = rows.filter { $0.value == nil }.map(\.name)
        let changed = try await connection.query("""
            WITH wanted AS (SELECT * FROM unnest(\(set.map(\.0))::text[], \(set.map(\.1))::text[]) AS w (name, value)),
                 before AS (SELECT name, value FROM relay_setting WHERE name = ANY(\(rows.map(\.name))::text[])),
                 written AS (INSERT INTO relay_setting (name, value) SELECT name, value FROM wanted
                             ON CONFLICT (name) DO UPDATE SET value = excluded.value),
                 deleted AS (DELETE FROM relay_setting WHERE name = ANY(\(removed)::text[]))
            SELECT before.name, before.value, wanted.value FROM before LEFT JOIN wanted USING (name)
            WHERE before.value IS DISTINCT FROM wanted.value ORDER BY 1
            """, logger: logger)
        var changes: [Change] = []
        for try await (name, before, after) in changed.decode((String, String, String?).self) {
            changes.append(Change(name: name, before: before, after: after))
        }
        return changes
    }

    /// The secret device tokens are signed with, shared by every relay of the database: the first relay's
    /// `candidate` is kept, and every later one reads it.
    public static func tokenSecret(candidate: String, on connection: PostgresConnection,
                                   logger: Logger) async throws -> String {
        try await connection.query("""
            INSERT INTO relay_setting (name, value) VALUES ('token_secret', \(candidate)) ON CONFLICT (name) DO NOTHING
            """, logger: logger)
        var secret = candidate
        for try await value in try await connection.query(
            "SELECT value FROM relay_setting WHERE name = 'token_secret'", logger: logger
        ).decode(String.self) { secret = value }
        return secret
    }
}
