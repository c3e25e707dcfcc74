import LiveRelayCore
import Logging
import PostgresNIO

/// The relay's rows in `relay_setting`, written at start-up on a connection of its own (before the pool runs).
public enum RelaySettings {
    /// Publishes, in one statement, the update budget and its warning level where the views read them
    /// (`liverelay_priority10_limit`, `liverelay_priority10_warning`) and the widget reload window where the triggers
    /// that queue reloads read it (sql/027_widgets.sql).
    public static func publishDeliverySettings(priority10PerHour perHour: Int, widgetIntervalSeconds seconds: Double,
                                               on connection: PostgresConnection, logger: Logger) async throws {
        let warning = String(UpdateBudget.warningAt)
        try await connection.query("""
            INSERT INTO relay_setting (name, value)
            VALUES ('priority10_per_hour', \(String(perHour))), ('priority10_warning', \(warning)),
                   ('widget_min_interval_seconds', \(String(seconds)))
            ON CONFLICT (name) DO UPDATE SET value = excluded.value
            """, logger: logger)
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
                                              logger: Logger) async throws {
        try await connection.query("""
            INSERT INTO relay_setting (name, value) VALUES ('fcm_enabled', \(defaults.fcmEnabled ? "true" : "false"))
            ON CONFLICT (name) DO UPDATE SET value = excluded.value
            """, logger: logger)
        if let bundleID = defaults.bundleID {
            try await connection.query("""
                INSERT INTO relay_setting (name, value) VALUES ('default_bundle_id', \(bundleID))
                ON CONFLICT (name) DO UPDATE SET value = excluded.value
                """, logger: logger)
        } else {
            try await connection.query(
                "DELETE FROM relay_setting WHERE name = 'default_bundle_id'", logger: logger)
        }
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
