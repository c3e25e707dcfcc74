/// The environment `liverelay dev` gives its relay: the user's, plus the dev defaults and the simulators' settings.
struct DevRelaySettings {
    let base: [String: String]
    let adminToken: String
    /// The APNs simulator's key and CA files, when the simulator stands in for Apple.
    let apnsSimulator: (keyPath: String, caPath: String)?

    init(environment: [String: String], adminToken: String, apnsSimulator: (keyPath: String, caPath: String)?) {
        base = environment
        self.adminToken = adminToken
        self.apnsSimulator = apnsSimulator
    }

    /// The relay's environment once the cluster and the APNs simulator listen (the caller merges FCM's settings).
    func environment(databaseURL: String, apnsSimulatorPort: Int?) -> [String: String] {
        var settings = base
        settings["DATABASE_URL"] = databaseURL
        settings["LIVERELAY_ADMIN_TOKEN"] = adminToken
        // Local work sends webhooks to local receivers.
        settings["LIVERELAY_WEBHOOK_ALLOW_PRIVATE"] = base["LIVERELAY_WEBHOOK_ALLOW_PRIVATE"] ?? "true"
        if let apnsSimulator, let port = apnsSimulatorPort {
            settings["APNS_TEAM_ID"] = "LRDEVTEAM1"
            settings["APNS_KEY_ID"] = "LRDEVKEY01"
            settings["APNS_PRIVATE_KEY_FILE"] = apnsSimulator.keyPath
            settings["APNS_PRODUCTION_URL"] = "https://127.0.0.1:\(port)"
            settings["APNS_SANDBOX_URL"] = "https://127.0.0.1:\(port)/sandbox"
            settings["APNS_CHANNELS_PRODUCTION_URL"] = "https://127.0.0.1:\(port)"
            settings["APNS_CHANNELS_SANDBOX_URL"] = "https://127.0.0.1:\(port)/sandbox"
            settings["APNS_CA_FILE"] = apnsSimulator.caPath
            settings["APNS_DEFAULT_BUNDLE_ID"] = base["APNS_DEFAULT_BUNDLE_ID"] ?? DevDemo.bundleID
        }
        return settings
    }

    /// The same settings with stand-ins for the addresses that exist only once the cluster and the simulators run,
    /// so that a bad setting is found before any of them is started.
    func trial(_ fcmSimulator: DevFCMSimulator?) throws -> [String: String] {
        let settings = environment(
            databaseURL: base["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:1/liverelay", apnsSimulatorPort: 1)
        return try settings.merging(fcmSimulator?.relayEnvironment(port: 1) ?? [:]) { $1 }
    }
}
