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

    /// The APNs settings; nil when one is refused (each refusal kept by `reader`, every setting read).
    static func fromEnvironment(_ reader: inout EnvironmentReader, fcmPossible: Bool = false) -> APNsConfiguration? {
        let refusedBefore = reader.problems.count
        let orFCM = fcmPossible ? "; or configure only FCM with FCM_SERVICE_ACCOUNT_FILE" : ""
        let teamID = reader.keep("") { reader throws(ConfigurationError) in
            try reader.required("APNS_TEAM_ID", hint: "your Apple developer team ID\(orFCM)")
        }
        let keyID = reader.keep("") { reader throws(ConfigurationError) in
            try reader.required("APNS_KEY_ID", hint: "the key ID of your APNs auth key (.p8)")
        }
        let pem = reader.keep("") { reader throws(ConfigurationError) in try reader.apnsKey() }
        var configuration = APNsConfiguration(
            teamID: teamID, keyID: keyID, privateKeyPEM: pem, defaultBundleID: reader.optional("APNS_DEFAULT_BUNDLE_ID")
        )
        func url(_ name: String, _ defaultValue: String) -> String {
            reader.keep(defaultValue) { reader throws(ConfigurationError) in
                try reader.httpsURL(name, default: defaultValue)
            }
        }
        configuration.productionURL = url("APNS_PRODUCTION_URL", configuration.productionURL)
        configuration.sandboxURL = url("APNS_SANDBOX_URL", configuration.sandboxURL)
        configuration.channelsProductionURL = url("APNS_CHANNELS_PRODUCTION_URL", configuration.channelsProductionURL)
        configuration.channelsSandboxURL = url("APNS_CHANNELS_SANDBOX_URL", configuration.channelsSandboxURL)
        configuration.broadcastProductionURL = url("APNS_BROADCAST_PRODUCTION_URL", configuration.productionURL)
        configuration.broadcastSandboxURL = url("APNS_BROADCAST_SANDBOX_URL", configuration.sandboxURL)
        configuration.caFile = reader.keep(nil) { reader throws(ConfigurationError) in
            try reader.readableFile("APNS_CA_FILE")
        }
        return reader.problems.count == refusedBefore ? configuration : nil
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

extension EnvironmentReader {
    /// The `.p8` key of `APNS_PRIVATE_KEY` or `APNS_PRIVATE_KEY_FILE`, PEM text (`\n` written out is read as a line
    /// break, as an env file gives it).
    func apnsKey() throws(ConfigurationError) -> String {
        guard let (_, text) = try inlineOrFile("APNS_PRIVATE_KEY") else {
            throw ConfigurationError(name: "APNS_PRIVATE_KEY",
                                     problem: "is not set (nor APNS_PRIVATE_KEY_FILE): give the .p8 key's PEM text")
        }
        let pem = text.replacingOccurrences(of: "\\n", with: "\n")
        guard (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
            throw ConfigurationError(name: "APNS_PRIVATE_KEY", problem: "is not a PEM-encoded P-256 private key (.p8)")
        }
        return pem
    }
}
