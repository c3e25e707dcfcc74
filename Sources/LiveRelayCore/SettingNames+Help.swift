extension SettingNames {
    /// One entry of `liverelay serve --help`: the variables it covers, what they set, and their default or need.
    public struct Line: Sendable {
        public var names: [String]
        public var meaning: String
        public var fallback: String?

        init(_ names: [String], _ meaning: String, _ fallback: String? = nil) {
            self.names = names
            self.meaning = meaning
            self.fallback = fallback
        }
    }

    /// Every setting, in the README's order, shortened to a line each (the README's table has the details).
    public static let lines: [Line] = [
        Line(["DATABASE_URL"], "postgres://user:pass@host:5432/db", "required"),
        Line(["APNS_TEAM_ID", "APNS_KEY_ID"], "your team ID and the .p8 key's ID", "required for iOS"),
        Line(["APNS_PRIVATE_KEY", "APNS_PRIVATE_KEY_FILE"], "the .p8 key (PEM text, or its file)", "required for iOS"),
        Line(["APNS_DEFAULT_BUNDLE_ID"], "bundle ID when a registration gives none"),
        Line(["APNS_PRODUCTION_URL", "APNS_SANDBOX_URL"], "APNs base URLs, https", "default Apple's"),
        Line(["APNS_CHANNELS_PRODUCTION_URL", "APNS_CHANNELS_SANDBOX_URL"], "Apple's Channel Management API",
             "default Apple's"),
        Line(["APNS_BROADCAST_PRODUCTION_URL", "APNS_BROADCAST_SANDBOX_URL"], "where channel broadcasts go",
             "default the APNs URLs"),
        Line(["APNS_CA_FILE"], "extra PEM trust roots for APNs (a simulator's CA)"),
        Line(["FCM_SERVICE_ACCOUNT_FILE", "FCM_SERVICE_ACCOUNT"],
             "the Firebase service-account key (file, or its JSON)", "required for Android"),
        Line(["FCM_PROJECT_ID"], "the Firebase project", "default the key's project_id"),
        Line(["FCM_URL"], "FCM's base URL, https", "default https://fcm.googleapis.com"),
        Line(["FCM_CA_FILE"], "extra PEM trust roots for FCM and its token endpoint"),
        Line(["PORT", "HOST"], "the HTTP listener", "default 8787, 127.0.0.1"),
        Line(["LIVERELAY_ADMIN_TOKEN"], "bearer token for admin routes, the dashboard and MCP; 16+ characters"),
        Line(["LIVERELAY_TOKEN_SECRET"], "signs device tokens; 16+ characters",
             "default generated, kept in the database"),
        Line(["LOG_LEVEL"], "trace, debug, info, notice, warning, error or critical", "default info"),
        Line(["LOG_FORMAT"], "text (a line per event) or json (an object per line, for a log collector)",
             "default text"),
        Line(["LIVERELAY_WORKERS", "LIVERELAY_BATCH_SIZE", "LIVERELAY_POLL_INTERVAL_MS"],
             "delivery workers, rows per batch, poll backstop", "default 2, 500, 500"),
        Line(["LIVERELAY_RETRY_MAX_DELAY_MS", "LIVERELAY_RETRY_MAX_ATTEMPTS"],
             "backoff cap, attempts before a delivery fails", "default 60000, 12"),
        Line(["LIVERELAY_PRIORITY10_PER_HOUR"], "an activity's priority-10 updates an hour", "default 120"),
        Line(["LIVERELAY_ACTIVITY_MAX_AGE"], "active activities older than this are ended", "default 8h"),
        Line(["LIVERELAY_WEBHOOK_ALLOW_PRIVATE"], "let webhooks reach loopback, private and link-local addresses",
             "default false"),
        Line(["LIVERELAY_FOREGROUND_PUSH"], "an update while its app is open: downgrade, skip or off",
             "default downgrade"),
        Line(["LIVERELAY_WIDGET_MIN_INTERVAL"], "the least time between two widget reloads of a token", "default 60s"),
        Line(["LIVERELAY_DELIVERY_LOG_RETENTION"], "how long delivery_log keeps a row: a duration (1h to 3650d) or off",
             "default 30d"),
        Line(["LIVERELAY_WAKEUP"], "what wakes the relay: auto (the WAL, over a replication connection, when "
             + "allowed; else NOTIFY) or notify", "default auto"),
        Line(["LIVERELAY_SQL_DIR"], "the folder holding migrations/, sql/, openapi.json and dashboard/",
             "default found beside the binary or in the working directory"),
    ]

    /// The lines as `--help` prints them: the names, then what they set and their default, indented.
    public static var helpText: String {
        let settings = lines.map { line in
            line.names.joined(separator: ", ") + "\n    " + line.meaning + (line.fallback.map { " (\($0))" } ?? "")
        }
        return "Settings, read from the environment (the README's \"Commands and configuration\" has each in full):\n"
            + settings.joined(separator: "\n")
    }
}
