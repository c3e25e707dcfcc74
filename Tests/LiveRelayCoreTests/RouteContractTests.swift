import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import LiveRelayHTTP
import LiveRelayCore
import LiveRelayMetrics
import LiveRelayPostgres
import LiveRelayStream
import Logging
import NIOCore
import PostgresNIO
import Testing

/// What the HTTP API answers before it asks the database: refused bodies, authentication, authorisation, methods,
/// unknown routes, MCP's challenge and handshake. The relay's real router, in process (HummingbirdTesting's router
/// mode), over a database that is never reached: a test here that needed it would hang, not pass.
@Suite("Routes answered without the database", .timeLimit(.minutes(1)))
struct RouteContractTests {
    static let adminToken = "route-admin-token-0123456789"
    static let auth = Authenticator(adminToken: adminToken, tokenSecret: "route-token-secret")

    struct AnyURL: WebhookURLCheck {
        func refusal(of url: String) async -> String? { nil }
    }

    static func withRouter(dashboard: DashboardFiles = DashboardFiles(files: [:]), probing: Bool = false,
                           _ test: @Sendable (any TestClientProtocol) async throws -> Void) async throws {
        let logger = Logger(label: "route-tests")
        // A port nothing listens on; the pool is never run.
        let connector = try DatabaseConnector(url: "postgres://nobody@127.0.0.1:9/none?sslmode=disable")
        let listener = WakeupListener(connector: connector, logger: logger)
        var api = RelayAPI(
            migrator: Migrator(migrations: [], repeatable: []), listener: listener,
            hub: BroadcastHub(connector: connector, listener: listener, logger: logger),
            pool: PostgresClient(configuration: connector.clientConfiguration, backgroundLogger: logger),
            metrics: RelayMetrics(), credentialsMinted: { [:] }, auth: auth, defaultBundleID: nil,
            openAPIDocument: Data(#"{"openapi":"3.1.0"}"#.utf8),
            dashboard: dashboard, webhookGuard: AnyURL(), logger: logger)
        if probing { api.databaseProbe = ConnectionProbe(connector: connector, logger: logger) }
        try await Application(router: api.makeRouter()).test(.router, test)
    }

    static func headers(_ pairs: [(String, String)]) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in pairs { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return fields
    }

    static let admin = [("Authorization", "Bearer \(adminToken)")]

    static func bearer(of device: UUID) -> [(String, String)] {
        [("Authorization", "Bearer \(auth.mintDeviceToken(for: device, lifetimeSeconds: 600).token)")]
    }

    static func json(_ response: TestResponse) -> JSONValue? {
        try? JSONValue(parsing: String(buffer: response.body))
    }

    @Test("with the database unreachable, a request that needs it answers 503 without the database's address")
    func databaseUnreachable() async throws {
        try await Self.withRouter(probing: true) { client in
            let body = #"{"secret":"pairing","deviceToken":"abcd","bundleId":"dev.example"}"#
            let reply = try await client.execute(
                uri: "/v1/device/register", method: .post, body: ByteBuffer(string: body))
            #expect(reply.status == .serviceUnavailable)
            // Within the suite's minute: without the probe the request would wait for a pool that never runs.
            #expect(Self.json(reply)?.objectValue?["error"] == .string("the database cannot be reached"))
        }
    }

    @Test("invalid bodies get 400 naming the field, oversized bodies 413, unknown routes the original 404, all JSON")
    func invalidBodies() async throws {
        let cases: [(String, String, String)] = [
            ("/v1/device/register", #"{"deviceToken":"ab"}"#, "secret"),
            ("/v1/device/register", #"{"secret":"x","deviceToken":42}"#, "deviceToken"),
            ("/v1/device/register", #"{"secret":"x","deviceToken":"ab","apnsEnv":"staging"}"#,
             #"apnsEnv must be sandbox or production, not "staging""#),
            ("/v1/activity/register", #"{"secret":"x","activityToken":"ab"}"#, "sessionID"),
            ("/v1/event", #"{"secret":"x","sessionID":"s","eventType":"explode"}"#,
             #"eventType must be complete, permission, error, progress or start, not "explode""#),
            ("/v1/event", #"{"secret":"x","sessionID":"s","eventType":"progress","contentState":[1]}"#, "contentState"),
            ("/v1/event", "not json", "the body must be JSON (unexpected character at byte 0)"),
            ("/v1/event", #"{"secret":"x" "sessionID":"s"}"#, "the body must be JSON (expected ',' or '}' at byte 14)"),
            ("/v1/event", "", "the body must be JSON (it is empty)"),
            // A key given twice: Foundation would take the first, PostgreSQL and JavaScript the last.
            ("/v1/device/register", #"{"secret":"x","deviceToken":"aa","deviceToken":"bb"}"#,
             #"the body must be JSON (the key "deviceToken" appears twice in one object at byte 33)"#),
            ("/v1/event", #"{"secret":"x","sessionID":"s","eventType":"progress","contentState":{"a":1,"a":2}}"#,
             #"the key "a" appears twice in one object at byte 75)"#),
            ("/v1/event", String(repeating: "[", count: 600), "the body must be JSON (nested more than 512 deep"),
            ("/v1/event", #"{"secret":"x","sessionID":"s","eventType":"complete","title":""}"#, "title"),
            ("/v1/event", #"{"secret":"x","sessionID":"s","eventType":"error","body":""}"#, "body"),
            // Tokens and bundle ids that no push could carry, named with their first wrong character.
            ("/v1/device/register", #"{"secret":"x","deviceToken":"ab cd"}"#, "deviceToken holds U+0020"),
            ("/v1/activity/register", #"{"secret":"x","sessionID":"s","activityToken":"ab/../cd"}"#,
             "activityToken holds '/', which no APNs or FCM token does"),
            ("/v1/device/register", #"{"secret":"x","deviceToken":"ab","bundleId":"a\r\nx-evil: 1"}"#,
             "bundleId holds U+000D"),
            ("/v1/device/register", #"{"secret":"x","deviceToken":"ab","pushToStartTokens":{"T":"a%2F"}}"#,
             "pushToStartTokens.T holds '%'"),
            ("/v1/device/register", #"{"secret":"x","deviceToken":"ab","widgetPushToken":"ab\tcd"}"#,
             "widgetPushToken holds U+0009"),
        ]
        try await Self.withRouter { client in
            for (path, body, field) in cases {
                let reply = try await client.execute(uri: path, method: .post, body: ByteBuffer(string: body))
                #expect(reply.status == .badRequest, "\(path) \(body)")
                let answer = Self.json(reply)
                #expect(answer?.objectValue?["ok"] == .bool(false))
                let error = answer?.objectValue?["error"]?.stringValue
                #expect(error?.contains(field) == true, "\(String(describing: answer))")
            }
            let huge = try await client.execute(
                uri: "/v1/event", method: .post,
                body: ByteBuffer(string: "{\"secret\":\"" + String(repeating: "a", count: 100_000) + "\"}"))
            #expect(huge.status == .contentTooLarge)
            #expect(Self.json(huge)?.objectValue?["ok"] == .bool(false))
            let unknown = try await client.execute(uri: "/v1/nothing-here", method: .get)
            #expect(unknown.status == .notFound)
            #expect(String(buffer: unknown.body) == #"{"error":"Not found","ok":false}"#)
            let wrongMethod = try await client.execute(uri: "/v1/event", method: .delete)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow] == "POST", "\(wrongMethod.headers)")
        }
    }

    @Test("a field's name written another way (case, _ or -) is refused, naming the field, instead of being dropped")
    func misspeltFields() async throws {
        let cases: [(String, String, String)] = [
            ("/v1/device/register", #"{"secret":"x","deviceToken":"ab","devicename":"Phone"}"#,
             "devicename is not a field of this body: did you mean deviceName?"),
            // The refusal a misspelling causes is explained by the misspelling.
            ("/v1/device/register", #"{"Secret":"x","deviceToken":"ab"}"#,
             "Secret is not a field of this body: did you mean secret?"),
            ("/v1/activity/register", #"{"secret":"x","sessionId":"s","activityToken":"ab"}"#,
             "sessionId is not a field of this body: did you mean sessionID?"),
            ("/v1/live-activities", #"{"token":"ab","content_state":{"a":1},"external_id":"e"}"#,
             "content_state is not a field of this body: did you mean contentState?"),
            ("/rest/v1/device_live_activity_message", #"[{"deviceUUID":"\#(UUID())","message":"m"}]"#,
             "deviceUUID is not a field of this body: did you mean device_uuid?"),
        ]
        try await Self.withRouter { client in
            for (path, body, sentence) in cases {
                let reply = try await client.execute(
                    uri: path, method: .post, headers: Self.headers(Self.admin), body: ByteBuffer(string: body))
                #expect(reply.status == .badRequest && Self.json(reply)?.objectValue?["error"] == .string(sentence),
                        "\(path) \(body): \(String(buffer: reply.body))")
            }
        }
    }

    @Test("admin routes: 401 without a credential or with a wrong token, 403 for a device token or a pairing secret")
    func adminRoutes() async throws {
        let device = UUID()
        try await Self.withRouter { client in
            for path in ["/v1/views/activities", "/v1/live-activities", "/v1/webhooks", "/v1/deliveries"] {
                #expect(try await client.execute(uri: path, method: .get).status == .unauthorized, "\(path)")
                let wrong = try await client.execute(
                    uri: path, method: .get, headers: Self.headers([("Authorization", "Bearer not-the-token")]))
                #expect(wrong.status == .unauthorized, "\(path)")
                let byDevice = try await client.execute(
                    uri: path, method: .get, headers: Self.headers(Self.bearer(of: device)))
                #expect(byDevice.status == .forbidden, "\(path)")
                let bySecret = try await client.execute(
                    uri: path, method: .get, headers: Self.headers([("X-Relay-Secret", "s3cret")]))
                #expect(bySecret.status == .forbidden, "\(path)")
                #expect(Self.json(bySecret)?.objectValue?["ok"] == .bool(false))
            }
        }
    }

    @Test("the stream and a device's routes: 401 unauthenticated, 403 for another device, 400 for a bad channel")
    func streamAndDeviceRoutes() async throws {
        let device = UUID(), other = UUID()
        let own = Self.headers(Self.bearer(of: device))
        try await Self.withRouter { client in
            let none = try await client.execute(uri: "/v1/stream?channel=device:\(device)", method: .get)
            #expect(none.status == .unauthorized)
            #expect(Self.json(none)?.objectValue?["ok"] == .bool(false))
            let lowered = "device:\(other.uuidString.lowercased())"
            #expect(try await client.execute(uri: "/v1/stream?channel=\(lowered)", method: .get, headers: own)
                .status == .forbidden)
            #expect(try await client.execute(uri: "/v1/stream?channel=*", method: .get, headers: own)
                .status == .forbidden)
            #expect(try await client.execute(uri: "/v1/stream?channel=admin", method: .get, headers: own)
                .status == .forbidden)
            let session = try await client.execute(uri: "/v1/stream?channel=session:s1", method: .get, headers: own)
            #expect(session.status == .forbidden, "a session needs its pairing secret")
            let bad = try await client.execute(uri: "/v1/stream?channel=nonsense", method: .get, headers: own)
            #expect(bad.status == .badRequest)
            #expect(try await client.execute(uri: "/v1/stream", method: .get, headers: own).status == .badRequest)
            let many = (0...100).map { "channel=device:\(device)&n=\($0)" }.joined(separator: "&")
            let tooMany = try await client.execute(uri: "/v1/stream?\(many)", method: .get, headers: own)
            #expect(Self.json(tooMany)?.objectValue?["error"]
                == .string("a stream follows at most 100 channels; 101 were given"))
            let long = try await client.execute(
                uri: "/v1/stream?channel=x\(String(repeating: "y", count: 5000))", method: .get, headers: own)
            let said = try #require(Self.json(long)?.objectValue?["error"]?.stringValue)
            #expect(said.hasPrefix("channel \"xyyy") && said.contains("…") && said.count < 200, "\(said)")
            // What a sentence quotes back shows control characters written out, never as they came.
            let control = try await client.execute(uri: "/v1/stream?channel=a%1B%5B2Jb%0Ac", method: .get, headers: own)
            #expect(Self.json(control)?.objectValue?["error"]?.stringValue?
                .hasPrefix(#"channel "a\u{1B}[2Jb\u{A}c" must be"#) == true, "\(String(buffer: control.body))")

            #expect(try await client.execute(uri: "/v1/devices/\(device)/token", method: .post).status
                == .unauthorized)
            #expect(try await client.execute(uri: "/v1/devices/\(other)/token", method: .post, headers: own).status
                == .forbidden)
            #expect(try await client.execute(uri: "/v1/devices/\(other)/widget", method: .get, headers: own).status
                == .forbidden)
            #expect(try await client.execute(uri: "/v1/devices/\(device)/widget", method: .get).status
                == .unauthorized)
        }
    }

    @Test("a bearer token given and not taken: 401 with RFC 6750's invalid_token, saying expired or not this relay's")
    func rejectedBearer() async throws {
        let device = UUID()
        let now = Int64(Date().timeIntervalSince1970)
        let expired = Self.auth.mintDeviceToken(for: device, lifetimeSeconds: 600, now: now - 3_600)
        let foreign = Authenticator(adminToken: nil, tokenSecret: "another-relays-secret")
            .mintDeviceToken(for: device, lifetimeSeconds: 600).token
        let valid = Self.auth.mintDeviceToken(for: device, lifetimeSeconds: 600).token
        let altered = String(valid.dropLast()) + (valid.hasSuffix("A") ? "B" : "A")
        let expiredAt = Date(timeIntervalSince1970: TimeInterval(expired.expiresAt)).formatted(.iso8601)
        let notOurs = "neither the admin token nor a device token signed by this relay"
        let cases: [(path: String, token: String, sentence: String)] = [
            ("/v1/stream?channel=device:\(device)", expired.token,
             "the device token for \(device.uuidString.lowercased()) expired at \(expiredAt)"),
            ("/v1/devices/\(device)/widget", altered, notOurs),
            ("/v1/devices/\(device)/widget", foreign, notOurs),
            ("/v1/live-activities", "not-the-admin-token", "neither the admin token nor a device token"),
            ("/v1/channels/c1", expired.token, "expired at"),
        ]
        try await Self.withRouter { client in
            for (path, token, sentence) in cases {
                let refused = try await client.execute(
                    uri: path, method: .get, headers: Self.headers([("Authorization", "Bearer \(token)")]))
                #expect(refused.status == .unauthorized, "\(path)")
                #expect(refused.headers[.wwwAuthenticate] == #"Bearer realm="liverelay", error="invalid_token""#)
                let error = Self.json(refused)?.objectValue?["error"]?.stringValue ?? ""
                #expect(error.contains(sentence), "\(path): \(error)")
                #expect(!error.contains(token), "the answer repeats the token")
            }
            // No bearer at all: the plain challenge, which names the header to send.
            let none = try await client.execute(uri: "/v1/devices/\(device)/widget", method: .get)
            #expect(none.headers[.wwwAuthenticate] == #"Bearer realm="liverelay""#)
            #expect(Self.json(none)?.objectValue?["error"]
                == .string("authentication required: Authorization: Bearer <token>"))
        }
    }

    @Test("POST /mcp: 401 with a Bearer challenge for anything but the admin token; initialize answers; GET is 405")
    func mcp() async throws {
        let initialize = """
            {"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",
             "capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
            """
        let accept = ("Accept", "application/json, text/event-stream")
        let json = ("Content-Type", "application/json")
        try await Self.withRouter { client in
            for credential in [[], [("Authorization", "Bearer lrd1.x.1.y")], [("X-Relay-Secret", "s3cret")],
                               Self.bearer(of: UUID())] {
                let refused = try await client.execute(
                    uri: "/mcp", method: .post, headers: Self.headers([accept, json] + credential),
                    body: ByteBuffer(string: initialize))
                #expect(refused.status == .unauthorized, "\(credential)")
                #expect(refused.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(credential)")
            }
            let answer = try await client.execute(
                uri: "/mcp", method: .post, headers: Self.headers(Self.admin + [accept, json]),
                body: ByteBuffer(string: initialize))
            #expect(answer.status == .ok)
            let server = Self.json(answer)?.objectValue?["result"]?.objectValue?["serverInfo"]?.objectValue
            #expect(server?["name"] == .string("liverelay"), "\(String(buffer: answer.body))")
            for (value, status) in [("*/*", HTTPResponse.Status.ok), ("text/html", .notAcceptable)] {
                let reply = try await client.execute(
                    uri: "/mcp", method: .post, headers: Self.headers(Self.admin + [("Accept", value), json]),
                    body: ByteBuffer(string: initialize))
                #expect(reply.status == status, "Accept: \(value)")
            }
            // Not JSON, or not a JSON-RPC message MCP allows (no `jsonrpc`, a batch, a fractional id, string
            // params): 400 with JSON-RPC's error object; an unknown method of a well-formed request is a JSON-RPC
            // answer (200).
            for (body, status) in [(#"{"method":"","id":"","params":{}}"#, HTTPResponse.Status.badRequest),
                                   ("{", .badRequest), (#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#, .badRequest),
                                   (#"{"jsonrpc":"2.0","id":2.5,"method":"ping"}"#, .badRequest),
                                   (#"{"jsonrpc":"2.0","id":19894307457014626402655,"method":"ping"}"#, .badRequest),
                                   (#"{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}"#, .badRequest),
                                   (#"{"jsonrpc":"2.0","id":2,"method":"ping","params":"x"}"#, .badRequest),
                                   (#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#, .ok),
                                   (#"{"jsonrpc":"2.0","id":2282.0,"method":"nope"}"#, .ok)] {
                let reply = try await client.execute(
                    uri: "/mcp", method: .post, headers: Self.headers(Self.admin + [accept, json]),
                    body: ByteBuffer(string: body))
                #expect(reply.status == status, "\(body)")
                let code = Self.json(reply)?.objectValue?["error"]?.objectValue?["code"]
                // A well-formed request for no method: JSON-RPC's "method not found", so the SDK read it.
                #expect(status == .ok ? code == .integer(-32601) : code != nil,
                        "\(body): \(String(buffer: reply.body))")
            }
            // A body that is not JSON is told where it stops being JSON.
            for (body, said) in [("{", "Parse error: the body is not JSON: expected a key at byte 1"),
                                 ("", "Parse error: the body is not JSON (it is empty)"),
                                 (#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
                                  #"Parse error: the body is not JSON: the key "id" appears twice in one object "#
                                    + "at byte 24")] {
                let reply = try await client.execute(
                    uri: "/mcp", method: .post, headers: Self.headers(Self.admin + [accept, json]),
                    body: ByteBuffer(string: body))
                #expect(Self.json(reply)?.objectValue?["error"]?.objectValue?["message"] == .string(said),
                        "\(String(buffer: reply.body))")
            }
            let stream = try await client.execute(
                uri: "/mcp", method: .get, headers: Self.headers(Self.admin + [accept]))
            #expect(stream.status == .methodNotAllowed)
        }
    }
}
