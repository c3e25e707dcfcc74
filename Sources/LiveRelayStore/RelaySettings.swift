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

    /// Publishes, in one statement, the update budget and its warning level where the views read them
    /// (`liverelay_priority10_limit`, `liverelay_priority10_warning`) and the widget reload window where the triggers
    /// that queue reloads read it (sql/027_widgets.sql).
    public static func publishDeliverySettings(priority10PerHour perHour: Int, widgetIntervalSeconds seconds: Double,
                                               on connection: PostgresConnection, logger: Logger)
        async throws -> [Change] {
        let warning = String(UpdateBudget.warningAt)
        // The CTE reads the rows as they were before the statement's own upsert.
        let rows = try await connection.query("""
            WITH before AS (SELECT name, value FROM relay_setting
                            WHERE name IN ('priority10_per_hour', 'priority10_warning', 'widget_min_interval_seconds')),
                 after AS (INSERT INTO relay_setting (name, value)
                           VALUES ('priority10_per_hour', \(String(perHour))), ('priority10_warning', \(warning)),
                                  ('widget_min_interval_seconds', \(String(seconds)))
                           ON CONFLICT (name) DO UPDATE SET value = excluded.value
                           RETURNING name, value)
            SELECT after.name, before.value, after.value FROM after JOIN before USING (name)
            WHERE before.value IS DISTINCT FROM after.value ORDER BY 1
            """, logger: logger)
        var changes: [Change] = []
        for try await (name, before, after) in rows.decode((String, String, String).self) {
            changes.append(Change(name: name, before: before, after: after))
        }
        return changes
    }

    /// What a write to `broadcast_channel` takes from the relay's configuration.
    public struct ChannelDefaults: Sendable {
        /// `APNS_DEFAULT_BUNDLE_ID`: the bundle of channels written without one.
        public var bundleID: String?
        /// FCM is configured: channel writes queue topic messages too.
        public var fcmEnabled: Bool
        public init(bundleID: String?, fcmEnabled: Bool) {
            self.bundleID = bundleID
            self.fcmEnabled = fcmEnabled
        }
    }

    /// Publishes the channels' defaults where their triggers read them (sql/050_channels.sql).
    public static func publishChannelDefaults(_ defaults: ChannelDefaults, on connection: PostgresConnection,
                                              logger: Logger) async throws -> [Change] {
        let fcm = defaults.fcmEnabled ? "true" : "false"
        // Both rows in one statement; `before` reads them as they were before it. An unset bundle deletes its row.
        // (PostgreSQL runs a data-modifying CTE to completion whether or not the query reads it.)
        let rows = try await connection.query("""
            WITH before AS (SELECT name, value FROM relay_setting WHERE name IN ('fcm_enabled', 'default_bundle_id')),
                 wanted (name, value) AS (VALUES ('fcm_enabled', \(fcm)), ('default_bundle_id', \(defaults.bundleID))),
                 written AS (INSERT INTO relay_setting (name, value)
                             SELECT name, value FROM wanted WHERE value IS NOT NULL
                             ON CONFLICT (name) DO UPDATE SET value = excluded.value
                             RETURNING name),
                 removed AS (DELETE FROM relay_setting
                             WHERE name IN (SELECT name FROM wanted WHERE value IS NULL)
                             RETURNING name)
            SELECT before.name, before.value, wanted.value FROM before JOIN wanted USING (name)
            WHERE before.value IS DISTINCT FROM wanted.value
            ORDER BY 1
            """, logger: logger)
        var changes: [Change] = []
        for try await (name, before, after) in rows.decode((String, String, String?).self) {
            changes.append(Change(name: name, before: before, after: after))
        }
        return changes
    }

    /// Records a digest of the secret this relay signs device tokens with, and answers whether the relay that started
    /// before it recorded another: then tokens one mints the other refuses. (Only the digest is kept, beside the
    /// generated secret the database holds anyway; neither is logged.)
    public static func publishTokenSecretDigest(of secret: String, on connection: PostgresConnection,
                                                logger: Logger) async throws -> Bool {
        let digest = sha256Hex("liverelay device-token secret:" + secret)
        var differed = false
        for try await before in try await connection.query("""
            WITH before AS (SELECT value FROM relay_setting WHERE name = 'token_secret_digest'),
                 written AS (INSERT INTO relay_setting (name, value) VALUES ('token_secret_digest', \(digest))
                             ON CONFLICT (name) DO UPDATE SET value = excluded.value)
            SELECT value FROM before
            """, logger: logger).decode(String.self) {
            differed = before != digest
        }
        return differed
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
