import LiveRelayDevSupport
import _CryptoExtras
import Crypto
import Foundation
import LiveRelayCore
import Testing
@testable import LiveRelayFCM

@Suite("FCM configuration, assertions, messages and answers")
struct FCMTests {
    static let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)

    static func account(_ changes: [String: String?] = [:]) -> String {
        var fields: [String: String] = [
            "type": "service_account", "project_id": "demo-project", "private_key_id": "kid-1",
            "private_key": key.pkcs8PEMRepresentation, "client_email": "relay@demo-project.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        for (name, value) in changes { fields[name] = value }
        let data = try! JSONSerialization.data(withJSONObject: fields)
        return String(decoding: data, as: UTF8.self)
    }

    let base = ["DATABASE_URL": "postgres://u:p@localhost:5432/db"]

    @Test("FCM alone is a complete configuration; the project is the service account's unless FCM_PROJECT_ID says")
    func fcmOnly() throws {
        var environment = base
        environment["FCM_SERVICE_ACCOUNT"] = Self.account()
        let configuration = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        #expect(configuration.apns == nil)
        #expect(configuration.fcm?.projectID == "demo-project")
        #expect(configuration.fcm?.url == "https://fcm.googleapis.com")
        #expect(configuration.enabledPlatforms == [.android])
        environment["FCM_PROJECT_ID"] = "other"
        #expect(try RelayConfiguration.fromEnvironment(environment, files: TestFiles()).fcm?.projectID == "other")
    }

    @Test("an FCM_URL that is not https says FCM's rule, not APNs'")
    func plainFCMURL() {
        var environment = base
        environment["FCM_SERVICE_ACCOUNT"] = Self.account()
        environment["FCM_URL"] = "http://fcm.example"
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            "\(error)".contains("FCM_URL must be an https:// URL (FCM speaks HTTP/2 over TLS only)")
        }
    }

    @Test("neither APNs nor FCM: start-up names what to set")
    func neither() {
        #expect {
            try RelayConfiguration.fromEnvironment(base, files: TestFiles())
        } throws: { error in
            "\(error)".contains("APNS_TEAM_ID is required") && "\(error)".contains("FCM_SERVICE_ACCOUNT_FILE")
        }
    }

    @Test("a broken service account stops start-up with one line naming the variable and the field, never the key",
          arguments: [
              ("{not json", "is not a JSON object"),
              (account(["client_email": nil]), "has no \"client_email\" field"),
              (account(["private_key": nil]), "has no \"private_key\" field"),
              (account(["private_key_id": nil]), "has no \"private_key_id\" field"),
              (account(["token_uri": nil]), "has no \"token_uri\" field"),
              (account(["private_key": P256.Signing.PrivateKey().pemRepresentation]), "\"private_key\" is not an RSA"),
              (account(["token_uri": "http://insecure/token"]), "\"token_uri\" is not an https:// URL"),
          ])
    func brokenAccount(json: String, expected: String) throws {
        let file = "/secrets/account.json"
        var environment = base
        environment["FCM_SERVICE_ACCOUNT_FILE"] = file
        do {
            _ = try RelayConfiguration.fromEnvironment(environment, files: TestFiles([file: json]))
            Issue.record("accepted \(expected)")
        } catch let error as ConfigurationError {
            #expect(error.name == "FCM_SERVICE_ACCOUNT_FILE")
            #expect(error.description.contains(expected), "\(error)")
            #expect(!error.description.contains("\n") && !error.description.contains("PRIVATE KEY"))
        }
        environment["FCM_SERVICE_ACCOUNT_FILE"] = "/nonexistent/account.json"
        #expect(throws: ConfigurationError.self) {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        }
    }

    @Test("the assertion is RS256 with kid, iss, scope, aud, iat and exp an hour later, and verifies")
    func assertion() throws {
        let account = try FCMServiceAccount(json: Self.account(), variable: "FCM_SERVICE_ACCOUNT")
        let jwt = try OAuthAssertionJWT.make(account: account, issuedAt: 1_800_000_000)
        let (keyID, claims) = try SimulatorJWT.verifyRS256(jwt, key: Self.key.publicKey, claims: AssertionClaims.self)
        #expect(keyID == "kid-1" && claims.iss == "relay@demo-project.iam.gserviceaccount.com")
        #expect(claims.scope == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims.aud == "https://oauth2.googleapis.com/token")
        #expect(claims.iat == 1_800_000_000 && claims.exp == 1_800_003_600)
        let other = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        #expect(throws: SimulatorJWT.Failure.badSignature) {
            try SimulatorJWT.verifyRS256(jwt, key: other.publicKey, claims: AssertionClaims.self)
        }
    }

    @Test("Google's answers map to outcomes", arguments: [
        (200, "{}", DeliveryOutcome.delivered, nil),
        (404, #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"errorCode":"UNREGISTERED"}]}}"#, .deadToken,
         "UNREGISTERED"),
        (404, #"{"error":{"code":404,"status":"NOT_FOUND","message":"Requested entity was not found."}}"#, .rejected,
         "NOT_FOUND"),
        (403, #"{"error":{"status":"PERMISSION_DENIED","details":[{"errorCode":"SENDER_ID_MISMATCH"}]}}"#, .deadToken,
         "SENDER_ID_MISMATCH"),
        (400, #"{"error":{"status":"INVALID_ARGUMENT","details":[{"fieldViolations":[{"field":"message.token"}]}]}}"#,
         .deadToken, "INVALID_ARGUMENT"),
        (400, #"{"error":{"status":"INVALID_ARGUMENT","details":[{"fieldViolations":[{"field":"message.data"}]}]}}"#,
         .rejected, "INVALID_ARGUMENT"),
        (403, #"{"error":{"status":"PERMISSION_DENIED"}}"#, .rejected, "PERMISSION_DENIED"),
        (401, #"{"error":{"status":"UNAUTHENTICATED"}}"#, .credentialsRejected, "UNAUTHENTICATED"),
        (429, #"{"error":{"status":"RESOURCE_EXHAUSTED","details":[{"errorCode":"QUOTA_EXCEEDED"}]}}"#,
         .retry(afterSeconds: 7), "QUOTA_EXCEEDED"),
        (503, #"{"error":{"status":"UNAVAILABLE"}}"#, .retry(afterSeconds: 7), "UNAVAILABLE"),
        (500, "not json", .retry(afterSeconds: 7), nil),
    ] as [(Int, String, DeliveryOutcome, String?)])
    func answers(status: Int, body: String, outcome: DeliveryOutcome, reason: String?) {
        let answer = FCMAnswer(status: status, body: body, retryAfterSeconds: 7)
        #expect(answer.outcome == outcome)
        #expect(answer.reason == reason)
    }

    @Test("a Live Activity message is data only, strings everywhere, high priority, collapsed per activity")
    func message() throws {
        let activity = UUID()
        let delivery = Delivery(
            platform: .android, kind: .activity, token: "tok", content: .liveActivity(.init(
                event: .end, contentState: .object(["a": .integer(1)]), staleDate: 1_900_000_000,
                dismissalDate: 1_900_000_100)),
            priority: 5, expiration: 1_000_600, id: UUID(), bundleID: "app", environment: .production,
            activityID: activity, sessionID: "s1", timestamp: 1_000_000)
        let body = FCMMessage.body(for: delivery, now: 1_000_000)
        let expectedID = JSONValue.string(activity.uuidString.lowercased())
        #expect(body == .object(["message": .object([
            "token": .string("tok"),
            "data": .object([
                "liveRelayActivityId": expectedID, "liveRelayEvent": .string("end"),
                "liveRelayContentState": .string(#"{"a":1}"#), "liveRelaySessionId": .string("s1"),
                "liveRelayTimestamp": .string("1000000"), "liveRelayStaleDate": .string("1900000000"),
                "liveRelayDismissalDate": .string("1900000100"),
            ]),
            "android": .object(["priority": .string("high"), "ttl": .string("600s"), "collapse_key": expectedID]),
        ])]))
        #expect(FCMMessage.pushType(of: delivery) == .data)
    }
}

/// An OAuth assertion's claims as Google's token endpoint reads them.
struct AssertionClaims: Decodable {
    var iss: String
    var scope: String
    var aud: String
    var iat: Int64
    var exp: Int64
}

/// The files a test's configuration names, in memory (the relay reads them through `ConfigurationFiles`).
struct TestFiles: ConfigurationFiles {
    var files: [String: String] = [:]

    init(_ files: [String: String] = [:]) {
        self.files = files
    }

    func contents(of path: String) -> String? { files[path] }

    func isReadable(_ path: String) -> Bool { files[path] != nil }
}
