import Foundation

/// Everything `liverelay serve` needs, built from the environment at the edge (README "Commands and
/// configuration").
public struct RelayConfiguration: Sendable {
    public static let defaultHost = "127.0.0.1"
    public static let defaultPort = 8787
    public var host: String = defaultHost
    public var port: Int = defaultPort
    public var databaseURL: String
    /// APNs, when configured (iOS deliveries).
    public var apns: APNsConfiguration?
    /// FCM HTTP v1, when configured (Android deliveries). At least one of the two is.
    public var fcm: FCMConfiguration?
    /// `APNS_DEFAULT_BUNDLE_ID`: the bundle ID of registrations that give none.
    public var defaultBundleID: String?
    /// Bearer token for admin routes; admin routes answer 401 when it is unset.
    public var adminToken: String?
    /// Signs device tokens; generated and stored in the database when unset.
    public var tokenSecret: String?
    public var logLevel: String = "info"
    public var logFormat = LogFormat.text
    public var delivery: DeliveryConfiguration = .init()
    /// Settings given for a push service that is not configured (`APNS_SANDBOX_URL` with only FCM set up): they do
    /// nothing, and start-up says so, so that a half-done setup shows.
    public var ignoredSettings: [String] = []
    /// Variables named like settings that are none (a misspelling): start-up warns of each.
    public var unknownSettings: [SettingNames.Unknown] = []

    public init(databaseURL: String, apns: APNsConfiguration?, fcm: FCMConfiguration? = nil) {
        self.databaseURL = databaseURL
        self.apns = apns
        self.fcm = fcm
        self.defaultBundleID = apns?.defaultBundleID
    }

    /// The transports configured, for the start-up line.
    public var enabledPlatforms: [Platform] {
        (apns == nil ? [] : [.ios]) + (fcm == nil ? [] : [.android])
    }

    /// `DATABASE_URL` alone, read and checked as `fromEnvironment` reads it, for the commands that need only the
    /// database (`migrate`, `mcp`).
    public static func databaseURL(in environment: [String: String], files: any ConfigurationFiles)
        throws(ConfigurationError) -> String {
        try EnvironmentReader(environment, files: files).postgresURL("DATABASE_URL")
    }

    /// Reads the configuration: every setting is read even after one is refused, and the refusals come back
    /// together (`fromEnvironment` adds what it makes of names it does not read).
    static func reading(_ environment: [String: String], files: any ConfigurationFiles)
        -> (configuration: RelayConfiguration, problems: [ConfigurationError]) {
        var reader = EnvironmentReader(environment, files: files)
        let databaseURL = reader.keep("") { reader throws(ConfigurationError) in
            try reader.postgresURL("DATABASE_URL")
        }
        // A push service is configured when any of its settings is given (then all it needs must be).
        let apnsGiven = ["APNS_TEAM_ID", "APNS_KEY_ID", "APNS_PRIVATE_KEY", "APNS_PRIVATE_KEY_FILE"]
            .contains { reader.optional($0) != nil }
        let fcmGiven = ["FCM_PROJECT_ID", "FCM_SERVICE_ACCOUNT", "FCM_SERVICE_ACCOUNT_FILE"]
            .contains { reader.optional($0) != nil }
        let fcm = fcmGiven ? FCMConfiguration.fromEnvironment(&reader) : nil
        let apns = apnsGiven || !fcmGiven ? APNsConfiguration.fromEnvironment(&reader, fcmPossible: true) : nil
        var configuration = RelayConfiguration(databaseURL: databaseURL, apns: apns, fcm: fcm)
        let apnsOnly = ["APNS_PRODUCTION_URL", "APNS_SANDBOX_URL", "APNS_CHANNELS_PRODUCTION_URL",
                        "APNS_CHANNELS_SANDBOX_URL", "APNS_BROADCAST_PRODUCTION_URL", "APNS_BROADCAST_SANDBOX_URL",
                        "APNS_CA_FILE"]
        configuration.ignoredSettings = ((apnsGiven || !fcmGiven ? [] : apnsOnly)
            + (fcmGiven ? [] : ["FCM_URL", "FCM_CA_FILE"])).filter { reader.optional($0) != nil }
        configuration.defaultBundleID = reader.optional("APNS_DEFAULT_BUNDLE_ID")
        configuration.host = reader.optional("HOST") ?? defaultHost
        configuration.port = reader.keep(defaultPort) { reader throws(ConfigurationError) in
            try reader.integer("PORT", default: defaultPort, range: 0...65535)
        }
        configuration.adminToken = reader.keep(nil) { reader throws(ConfigurationError) in
            try reader.secret("LIVERELAY_ADMIN_TOKEN", because: """
                it is the only credential of the admin routes, the dashboard and MCP, so it must not be guessable; \
                make one with `openssl rand -hex 24`
                """)
        }
        // One device token is enough to try guesses at its signing secret offline, as fast as the guesser can hash.
        configuration.tokenSecret = reader.keep(nil) { reader throws(ConfigurationError) in
            try reader.secret("LIVERELAY_TOKEN_SECRET", because: """
                it signs every device token, so it must not be guessable; leave it unset to have one generated and \
                shared through the database, or make one with `openssl rand -hex 32`
                """)
        }
        configuration.logLevel = reader.keep("info") { reader throws(ConfigurationError) in
            try reader.choice("LOG_LEVEL", default: "info",
                              among: ["trace", "debug", "info", "notice", "warning", "error", "critical"])
        }
        configuration.logFormat = reader.keep(LogFormat.text) { reader throws(ConfigurationError) in
            try reader.choice("LOG_FORMAT", default: LogFormat.text)
        }
        configuration.delivery = DeliveryConfiguration.fromEnvironment(&reader)
        return (configuration, reader.problems)
    }
}
