import LiveRelayDevSupport
import Crypto
import Foundation
import LiveRelayAPNs
import LiveRelayCore
import Testing

@Suite("Configuration and provider tokens")
struct ConfigurationTests {
    let key = P256.Signing.PrivateKey()

    var valid: [String: String] {
        ["DATABASE_URL": "postgres://u:p@localhost:5432/db", "APNS_TEAM_ID": "TEAM123456", "APNS_KEY_ID": "KEY1234567",
         "APNS_PRIVATE_KEY": key.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")]
    }

    @Test("defaults, and literal \\n in APNS_PRIVATE_KEY")
    func defaults() throws {
        let configuration = try RelayConfiguration.fromEnvironment(valid, files: TestFiles())
        #expect(configuration.port == 8787)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.apns?.productionURL == "https://api.push.apple.com")
        #expect(configuration.apns?.sandboxURL == "https://api.sandbox.push.apple.com")
        #expect(configuration.apns?.privateKeyPEM.contains("\n") == true)
        #expect(configuration.delivery.foregroundPolicy == .downgrade)
        #expect(configuration.delivery.widgetMinIntervalSeconds == 60)
        var chosen = valid
        chosen["LIVERELAY_FOREGROUND_PUSH"] = "Skip"
        chosen["LIVERELAY_WIDGET_MIN_INTERVAL"] = "90s"
        let skip = try RelayConfiguration.fromEnvironment(chosen, files: TestFiles())
        #expect(skip.delivery.foregroundPolicy == .skip && skip.delivery.widgetMinIntervalSeconds == 90)
    }

    @Test("the delivery log is kept 30 days unless told otherwise; off keeps every row")
    func deliveryLogRetention() throws {
        #expect(try RelayConfiguration.fromEnvironment(valid, files: TestFiles()).delivery.deliveryLogRetentionSeconds
            == 30 * 86_400)
        for (text, seconds) in [("7d", 7 * 86_400.0), ("36h", 36 * 3600), ("OFF", nil), ("off", nil)] {
            var environment = valid
            environment["LIVERELAY_DELIVERY_LOG_RETENTION"] = text
            let configuration = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
            #expect(configuration.delivery.deliveryLogRetentionSeconds == seconds, "\(text)")
        }
    }

    @Test("settings of a push service that is not configured are listed as ignored; a configured one's are used")
    func ignoredSettings() throws {
        var environment = valid
        environment["APNS_SANDBOX_URL"] = "https://sandbox.example"
        environment["FCM_URL"] = "https://fcm.example"
        environment["FCM_CA_FILE"] = "  "
        let configuration = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        // APNs is configured, so its URL is used; FCM is not, so its URL does nothing (a blank value is not given).
        #expect(configuration.apns?.sandboxURL == "https://sandbox.example")
        #expect(configuration.ignoredSettings == ["FCM_URL"])
        #expect(try RelayConfiguration.fromEnvironment(valid, files: TestFiles()).ignoredSettings.isEmpty)
    }

    @Test("a short admin token is refused with why and how to make one")
    func shortAdminToken() {
        var environment = valid
        environment["LIVERELAY_ADMIN_TOKEN"] = "letmein"
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            let text = "\(error)"
            return text.contains("LIVERELAY_ADMIN_TOKEN is shorter than 16 characters")
                && text.contains("openssl rand -hex 24") && !text.contains("\n") && !text.contains("letmein")
        }
    }

    @Test("a short device-token secret is refused with why, what unset does, and how to make one")
    func shortTokenSecret() throws {
        var environment = valid
        environment["LIVERELAY_TOKEN_SECRET"] = "changeme"
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            let text = "\(error)"
            return text.contains("LIVERELAY_TOKEN_SECRET is shorter than 16 characters: it signs every device token")
                && text.contains("leave it unset") && text.contains("openssl rand -hex 32")
                && !text.contains("\n") && !text.contains("changeme")
        }
        environment["LIVERELAY_TOKEN_SECRET"] = "0123456789abcdef"
        let configuration = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        #expect(configuration.tokenSecret == "0123456789abcdef")
    }

    @Test("a value out of its choices is quoted back, and a URL's rule names its own service", arguments: [
        ("LOG_LEVEL", "loud", #"LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical, "#
            + #"got "loud""#),
        ("APNS_SANDBOX_URL", "http://x", "APNS_SANDBOX_URL must be an https:// URL (APNs speaks HTTP/2 over TLS only)"),
    ])
    func quotesTheValue(name: String, value: String, expected: String) {
        var environment = valid
        environment[name] = value
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test("a missing or malformed setting names itself", arguments: [
        ("DATABASE_URL", nil, "DATABASE_URL"),
        ("DATABASE_URL", "mysql://x", "DATABASE_URL"),
        ("APNS_KEY_ID", nil, "APNS_KEY_ID"),
        ("APNS_PRIVATE_KEY", "not a key", "APNS_PRIVATE_KEY"),
        ("PORT", "eighty", "PORT"),
        ("APNS_PRODUCTION_URL", "http://insecure", "APNS_PRODUCTION_URL"),
        ("LOG_LEVEL", "loud", "LOG_LEVEL"),
        ("LOG_FORMAT", "yaml", "LOG_FORMAT"),
        ("LIVERELAY_FOREGROUND_PUSH", "sometimes", "LIVERELAY_FOREGROUND_PUSH"),
        ("LIVERELAY_WIDGET_MIN_INTERVAL", "soon", "LIVERELAY_WIDGET_MIN_INTERVAL"),
        ("LIVERELAY_WIDGET_MIN_INTERVAL", "2d", "LIVERELAY_WIDGET_MIN_INTERVAL"),
    ] as [(String, String?, String)])
    func namesTheSetting(name: String, value: String?, expected: String) {
        var environment = valid
        environment[name] = value
        do {
            _ = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
            Issue.record("accepted \(name)=\(value ?? "nil")")
        } catch let error as ConfigurationError {
            #expect(error.name == expected)
            #expect(!error.description.contains("\n"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("several bad settings are named together, one line each in reading order, so one restart fixes them all")
    func everyProblemAtOnce() {
        var environment = valid
        environment["DATABASE_URL"] = nil
        environment["APNS_KEY_ID"] = nil
        environment["PORT"] = "eighty"
        environment["LIVERELAY_WORKERS"] = "0"
        environment["LIVERELAY_FOREGROUND_PUSH"] = "sometimes"
        environment["APNS_KEYID"] = "KEY1234567"
        #expect {
            try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
        } throws: { error in
            guard let errors = error as? ConfigurationErrors else { return false }
            let lines = "\(errors)".split(separator: "\n").map(String.init)
            #expect(lines.first == "liverelay: 5 configuration errors:")
            #expect(errors.errors.map(\.name) == ["DATABASE_URL", "APNS_KEY_ID", "PORT", "LIVERELAY_WORKERS",
                                                  "LIVERELAY_FOREGROUND_PUSH"])
            // Each refusal keeps its whole sentence, misspelling hint included.
            #expect(lines.count == 6 && lines.dropFirst().allSatisfy { $0.hasPrefix("  ") })
            #expect(lines[2].contains("APNS_KEYID is set, which LiveRelay does not read: did you mean APNS_KEY_ID?"))
            #expect(lines[5].contains(#"got "sometimes""#))
            return true
        }
        // A broken FCM setup is not also read as a missing APNs one.
        var fcmOnly = valid
        for name in ["APNS_TEAM_ID", "APNS_KEY_ID", "APNS_PRIVATE_KEY"] { fcmOnly[name] = nil }
        fcmOnly["FCM_PROJECT_ID"] = "demo"
        fcmOnly["FCM_URL"] = "http://fcm.example"
        #expect {
            try RelayConfiguration.fromEnvironment(fcmOnly, files: TestFiles())
        } throws: { error in
            let names = (error as? ConfigurationErrors)?.errors.map(\.name)
            #expect(names == ["FCM_SERVICE_ACCOUNT_FILE", "FCM_URL"], "\(error)")
            return names != nil
        }
    }

    @Test("a duration out of range says its bounds in words", arguments: [
        ("LIVERELAY_WIDGET_MIN_INTERVAL", "2d", "between 0 s and 1 day; got \"2d\""),
        ("LIVERELAY_ACTIVITY_MAX_AGE", "8 hours", "between 1 s and 7 days; got \"8 hours\""),
        ("LIVERELAY_DELIVERY_LOG_RETENTION", "10m",
         "such as 30d or 12h (or off, to keep all), between 3600 s and 3650 days; got \"10m\""),
        ("LIVERELAY_DELIVERY_LOG_RETENTION", "never", "between 3600 s and 3650 days; got \"never\""),
    ])
    func durationBounds(name: String, value: String, expected: String) {
        var environment = valid
        environment[name] = value
        #expect(throws: ConfigurationError.self) {
            do {
                _ = try RelayConfiguration.fromEnvironment(environment, files: TestFiles())
            } catch {
                #expect(String(describing: error).hasSuffix(expected), "\(error)")
                throw error
            }
        }
    }

    @Test("the provider token is ES256, verifiable, and reused until it is 50 minutes old")
    func providerTokenLifetime() throws {
        let clock = TestClock(now: 1_800_000_000)
        let source = try ProviderTokenSource(
            teamID: "T", keyID: "K", privateKeyPEM: key.pemRepresentation, now: { clock.now })
        let first = try source.token()
        let (keyID, claims) = try SimulatorJWT.verifyES256(first, key: key.publicKey, claims: ProviderTokenClaims.self)
        #expect(keyID == "K" && claims.iss == "T" && claims.iat == 1_800_000_000)
        clock.now += 49 * 60
        #expect(try source.token() == first)
        clock.now += 60
        #expect(try source.token() != first)
        #expect(source.mintCount == 2)
    }

    @Test("a refresh after ExpiredProviderToken mints once, however many requests saw it")
    func refreshOnce() throws {
        let source = try ProviderTokenSource(teamID: "T", keyID: "K", privateKeyPEM: key.pemRepresentation)
        let old = try source.token()
        let fresh = try source.refresh(rejected: old)
        #expect(try source.refresh(rejected: old) == fresh)
        #expect(source.mintCount == 2)
    }

    @Test("a token signed by another key does not verify")
    func wrongKey() throws {
        let token = try ProviderTokenJWT.make(
            teamID: "T", keyID: "K", issuedAt: 1, privateKey: P256.Signing.PrivateKey())
        #expect(throws: SimulatorJWT.Failure.badSignature) {
            try SimulatorJWT.verifyES256(token, key: key.publicKey, claims: ProviderTokenClaims.self)
        }
    }
}

/// A provider token's claims as APNs reads them.
struct ProviderTokenClaims: Decodable {
    var iss: String
    var iat: Int64
}

final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Int64
    init(now: Int64) { value = now }
    var now: Int64 {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

@Suite("SQL scripts")
struct SQLScriptTests {
    @Test("splits on semicolons outside quotes, dollar quotes and comments")
    func splits() {
        let sql = """
            -- a comment; with a semicolon
            CREATE TABLE a (x text DEFAULT 'a;b');
            CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM 1; END $$;
            /* block; comment */ SELECT "we;ird" FROM a;
            CREATE FUNCTION g() RETURNS text LANGUAGE sql AS $body$ SELECT 'x;' $body$
            """
        let statements = SQLScript.statements(sql)
        #expect(statements.count == 4)
        #expect(statements[1].hasSuffix("END $$"))
        #expect(statements[3].hasSuffix("$body$"))
    }
}
