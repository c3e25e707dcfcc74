import _CryptoExtras
import Foundation

/// How the relay reaches FCM HTTP v1 (README "Android (FCM HTTP v1)").
public struct FCMConfiguration: Sendable {
    public var projectID: String
    public var serviceAccount: FCMServiceAccount
    public static let defaultURL = "https://fcm.googleapis.com"
    /// `FCM_URL`, without a trailing slash.
    public var url: String = defaultURL
    /// Extra PEM trust roots for FCM and its token endpoint (for a simulator).
    public var caFile: String?
    /// How long FCM may go without answering any request of a batch (as for APNs).
    public var requestTimeoutSeconds: Double = 10
    /// The longest a batch waits for FCM however steadily it answers.
    public var batchLimitSeconds: Double = 60

    public init(projectID: String, serviceAccount: FCMServiceAccount) {
        self.projectID = projectID
        self.serviceAccount = serviceAccount
    }

    /// The FCM settings; nil when one is refused (each refusal kept by `reader`, every setting read).
    static func fromEnvironment(_ reader: inout EnvironmentReader) -> FCMConfiguration? {
        let refusedBefore = reader.problems.count
        let account: FCMServiceAccount? = reader.keep(nil) { reader throws(ConfigurationError) in
            guard let (variable, text) = try reader.inlineOrFile("FCM_SERVICE_ACCOUNT") else {
                throw ConfigurationError(name: "FCM_SERVICE_ACCOUNT_FILE", problem: """
                    is not set (nor FCM_SERVICE_ACCOUNT): give the path of the Firebase service-account JSON key
                    """)
            }
            return try FCMServiceAccount(json: text, variable: variable)
        }
        let projectID = reader.optional("FCM_PROJECT_ID") ?? account?.projectID
        if projectID == nil, account != nil {
            reader.refuse("FCM_PROJECT_ID", "is required (the Firebase project ID; the service account names none)")
        }
        let url = reader.keep(FCMConfiguration.defaultURL) { reader throws(ConfigurationError) in
            try reader.httpsURL("FCM_URL", default: FCMConfiguration.defaultURL)
        }
        let caFile = reader.keep(nil) { reader throws(ConfigurationError) in try reader.readableFile("FCM_CA_FILE") }
        guard reader.problems.count == refusedBefore, let account, let projectID else { return nil }
        var configuration = FCMConfiguration(projectID: projectID, serviceAccount: account)
        configuration.url = url
        configuration.caFile = caFile
        return configuration
    }
}

/// The fields of a Google service-account key the relay uses.
public struct FCMServiceAccount: Sendable {
    public var clientEmail: String
    /// RSA private key, PEM (PKCS#8 as Google issues it, or PKCS#1).
    public var privateKeyPEM: String
    public var privateKeyID: String
    /// The OAuth token endpoint the assertion is posted to (and its `aud`).
    public var tokenURI: String
    public var projectID: String?

    /// Parses and checks a service-account JSON; the error names `variable` and the field, never the key.
    public init(json text: String, variable: String) throws(ConfigurationError) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw ConfigurationError(name: variable, problem: "is not a JSON object (a Google service-account key)")
        }
        func field(_ name: String) throws(ConfigurationError) -> String {
            guard let value = object[name] as? String, !value.isEmpty else {
                throw ConfigurationError(
                    name: variable, problem: "has no \"\(name)\" field (a Google service-account key)")
            }
            return value
        }
        clientEmail = try field("client_email")
        privateKeyPEM = try field("private_key").replacingOccurrences(of: "\\n", with: "\n")
        privateKeyID = try field("private_key_id")
        tokenURI = try field("token_uri")
        projectID = object["project_id"] as? String
        guard (try? _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)) != nil else {
            throw ConfigurationError(name: variable, problem: "field \"private_key\" is not an RSA private key in PEM")
        }
        guard let uri = URLComponents(string: tokenURI), uri.scheme == "https", uri.host?.isEmpty == false else {
            throw ConfigurationError(name: variable, problem: "field \"token_uri\" is not an https:// URL")
        }
    }
}
