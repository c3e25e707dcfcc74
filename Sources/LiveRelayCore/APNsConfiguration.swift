import Crypto

/// How the relay reaches APNs.
public struct APNsConfiguration: Sendable {
    public var teamID: String
    public var keyID: String
    /// The `.p8` key, PEM text.
    public var privateKeyPEM: String
    public var defaultBundleID: String?
    public var productionURL: String = "https://api.push.apple.com"
    public var sandboxURL: String = "https://api.sandbox.push.apple.com"
    /// Apple's Channel Management API (`APNS_CHANNELS_PRODUCTION_URL`, `APNS_CHANNELS_SANDBOX_URL`).
    public var channelsProductionURL = "https://api-manage-broadcast.push.apple.com:2196"
    public var channelsSandboxURL = "https://api-manage-broadcast.sandbox.push.apple.com:2195"
    /// Where broadcasts go (`APNS_BROADCAST_PRODUCTION_URL`, `APNS_BROADCAST_SANDBOX_URL`); nil: the push URL.
    public var broadcastProductionURL: String?
    public var broadcastSandboxURL: String?
    /// Extra PEM trust roots (for a simulator).
    public var caFile: String?
    /// How long APNs may go without answering any request of a batch before the rest count as unanswered (and are
    /// retried). Answers arriving keep the batch waiting: slow is not dead, and giving up on a request APNs is still
    /// working through would make it send that push twice.
    public var requestTimeoutSeconds: Double = 10
    /// The longest a batch waits for APNs however steadily it answers.
    public var batchLimitSeconds: Double = 60

    public init(teamID: String, keyID: String, privateKeyPEM: String, defaultBundleID: String? = nil) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
        self.defaultBundleID = defaultBundleID
    }

    static func fromEnvironment(_ reader: inout EnvironmentReader, fcmPossible: Bool = false) throws
        -> APNsConfiguration {
        let teamID = try reader.required("APNS_TEAM_ID", hint: """
            your Apple developer team ID\(fcmPossible ? "; or configure only FCM with FCM_SERVICE_ACCOUNT_FILE" : "")
            """)
        let keyID = try reader.required("APNS_KEY_ID", hint: "the key ID of your APNs auth key (.p8)")
        guard let (_, text) = try reader.inlineOrFile("APNS_PRIVATE_KEY") else {
            throw ConfigurationError(name: "APNS_PRIVATE_KEY",
                                     problem: "is not set (nor APNS_PRIVATE_KEY_FILE): give the .p8 key's PEM text")
        }
        let pem = text.replacingOccurrences(of: "\\n", with: "\n")
        guard (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
            throw ConfigurationError(name: "APNS_PRIVATE_KEY", problem: "is not a PEM-encoded P-256 private key (.p8)")
        }
        var configuration = APNsConfiguration(
            teamID: teamID, keyID: keyID, privateKeyPEM: pem, defaultBundleID: reader.optional("APNS_DEFAULT_BUNDLE_ID")
        )
        configuration.productionURL = try reader.httpsURL("APNS_PRODUCTION_URL", default: configuration.productionURL)
        configuration.sandboxURL = try reader.httpsURL("APNS_SANDBOX_URL", default: configuration.sandboxURL)
        configuration.channelsProductionURL = try reader.httpsURL(
            "APNS_CHANNELS_PRODUCTION_URL", default: configuration.channelsProductionURL)
        configuration.channelsSandboxURL = try reader.httpsURL(
            "APNS_CHANNELS_SANDBOX_URL", default: configuration.channelsSandboxURL)
        configuration.broadcastProductionURL = try reader.httpsURL(
            "APNS_BROADCAST_PRODUCTION_URL", default: configuration.productionURL)
        configuration.broadcastSandboxURL = try reader.httpsURL(
            "APNS_BROADCAST_SANDBOX_URL", default: configuration.sandboxURL)
        configuration.caFile = try reader.readableFile("APNS_CA_FILE")
        return configuration
    }

    /// The base URL of an environment.
    public func baseURL(for environment: APNsEnvironment) -> String {
        environment == .production ? productionURL : sandboxURL
    }

    /// The Channel Management API of an environment.
    public func channelsURL(for environment: APNsEnvironment) -> String {
        environment == .production ? channelsProductionURL : channelsSandboxURL
    }

    /// Where an environment's broadcasts go.
    public func broadcastURL(for environment: APNsEnvironment) -> String {
        (environment == .production ? broadcastProductionURL : broadcastSandboxURL) ?? baseURL(for: environment)
    }
}
