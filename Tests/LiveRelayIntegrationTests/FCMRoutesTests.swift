import _CryptoExtras
import FCMSimulator
import Foundation
import LiveRelayCore
import Testing

/// Android through the relay's routes, a relay with only FCM, FCM's size limit in the triggers, and token lifetime.
@Suite("Android through the routes")
struct FCMRoutesTests {
    @Test("/v1/event alerts an Android device with notification + data, and reports the real outcome")
    func alert() async throws {
        try await Harness.withFCMRelay { h, fcm, port in
            let api = RelayHTTP(port: port)
            let token = randomFCMToken()
            let register = try await api.post("/v1/device/register",
                #"{"secret":"pair","deviceToken":"\#(token)","bundleId":"dev.app","platform":"android"}"#)
            #expect(register.status == 200)
            let event = try await api.post("/v1/event",
                #"{"secret":"pair","serverID":"srv1","eventType":"complete","sessionID":"ses_1","title":"Done","#
                    + #""body":"All good"}"#)
            #expect(event["sent"] == .integer(1) && event["failed"] == .integer(0))
            let message = try #require(fcm.simulator.messages().first)
            #expect(message.token == token)
            #expect(message.notification == .object(["title": .string("Done"), "body": .string("All good")]))
            #expect(message.data == ["eventType": "complete", "sessionID": "ses_1", "serverID": "srv1"])
            #expect(message.android?.objectValue?["priority"] == .string("high"))
            #expect(h.simulator.pushes().isEmpty, "nothing went to APNs")
            let bad = try await api.post("/v1/device/register",
                #"{"secret":"pair","deviceToken":"x","bundleId":"dev.app","platform":"windows"}"#)
            #expect(bad.status == 400 && bad.text.contains(#"platform must be ios or android, not \"windows\""#))
            // iOS-only tokens are refused for an Android device, by name, rather than stored and never used.
            for field in [#""pushToStartToken":"\#(randomToken())""#,
                          #""pushToStartTokens":{"DeliveryAttributes":"\#(randomToken())"}"#,
                          #""widgetPushToken":"\#(randomToken())""#] {
                let refused = try await api.post("/v1/device/register",
                    #"{"secret":"pair","deviceToken":"\#(token)","platform":"android",\#(field)}"#)
                let name = field.dropFirst().prefix { $0 != "\"" }
                #expect(refused.status == 400 && refused.text.contains("\(name) is for iOS devices"),
                        "\(refused.text)")
            }
            #expect(try await h.rows("SELECT count(*) FROM device_push_to_start", as: Int64.self) == [0])
        }
    }

    @Test("POST /v1/live-activities with platform android starts it; PUT .../token moves the next update")
    func liveActivityAPI() async throws {
        try await Harness.withFCMRelay { h, fcm, port in
            let api = RelayHTTP(port: port)
            let first = randomFCMToken(), second = randomFCMToken()
            let created = try await api.post("/v1/live-activities", #"""
                {"platform":"android","fcmToken":"\#(first)","activityType":"Delivery","attributes":{"order":"42"},
                 "contentState":{"eta":5},"externalId":"order-42","userId":"u1"}
                """#, headers: RelayHTTP.admin)
            #expect(created.status == 201)
            #expect(created["platform"] == .string("android") && created["externalId"] == .string("order-42"))
            let id = try #require(created["id"].flatMap { if case .string(let text) = $0 { text } else { nil } })
            let start = try #require(try await fcm.waitForMessages { $0.count == 1 }.first)
            #expect(start.token == first && start.data["liveRelayEvent"] == "start")
            #expect(start.data["liveRelayContentState"] == #"{"eta":5}"#)
            #expect(start.data["liveRelaySessionId"] == "order-42")
            let rotated = try await api.request(.PUT, "/v1/live-activities/\(id)/token",
                                                json: #"{"fcmToken":"\#(second)"}"#, headers: RelayHTTP.admin)
            #expect(rotated.status == 200)
            // The new token gets the current state at once, then the next update.
            let current = try #require(try await fcm.waitForMessages { $0.count == 2 }.last)
            #expect(current.token == second && current.data["liveRelayContentState"] == #"{"eta":5}"#)
            let update = try await api.request(.PATCH, "/v1/live-activities/\(id)",
                                               json: #"{"contentState":{"eta":2}}"#, headers: RelayHTTP.admin)
            #expect(update.status == 200)
            let next = try #require(try await fcm.waitForMessages { $0.count == 3 }.last)
            #expect(next.token == second && next.data["liveRelayEvent"] == "update")
            #expect(next.data["liveRelayContentState"] == #"{"eta":2}"#)
        }
    }

    @Test("a relay with only FCM delivers Android and settles iOS deliveries as APNsNotConfigured, never retried")
    func fcmOnly() async throws {
        let noAPNs = ["APNS_TEAM_ID": "", "APNS_KEY_ID": "", "APNS_PRIVATE_KEY": ""]
        try await Harness.withFCMRelay(environment: noAPNs) { h, fcm, port in
            try await h.registerAndroidActivity(session: "droid", token: randomFCMToken())
            try await h.registerActivity(session: "phone")
            try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
            try await fcm.waitForMessages { $0.count == 1 }
            try await h.waitUntil("""
                SELECT count(*) = 1 FROM delivery_log
                WHERE session_id = 'phone' AND status = 'failed' AND error = 'APNsNotConfigured'
                  AND transport IS NULL AND push_type IS NULL
                """)
            #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self) == [0])
            let metrics = try await RelayHTTP(port: port).request(.GET, "/metrics")
            #expect(metrics.text.contains(#"liverelay_credentials_minted{transport="fcm"} 1"#))
            #expect(metrics.text.contains(#"liverelay_commit_to_delivery_seconds_bucket{transport="fcm""#))
            #expect(!metrics.text.contains("liverelay_provider_tokens_minted"))
        }
    }

    @Test("FCM's 4096 bytes of data are enforced by the triggers for Android rows (escaped content-state counts)")
    func sizeLimit() async throws {
        try await Harness.with { h in
            try await h.registerAndroidActivity(session: "big-android", token: randomFCMToken())
            try await h.registerActivity(session: "big-ios")
            // 400 keys: ~3,500 bytes as JSON (fits APNs), ~5,100 once escaped into a string (does not fit FCM).
            let state = "{" + (0..<400).map { #""\#($0)":"""# }.joined(separator: ",") + "}"
            try await h.sql(
                "UPDATE activity_registration SET content_state = \(state)::jsonb WHERE session_id = 'big-ios'")
            do {
                try await h.sql(
                    "UPDATE activity_registration SET content_state = \(state)::jsonb WHERE session_id = 'big-android'")
                Issue.record("an Android state over FCM's limit was accepted")
            } catch {
                let text = String(reflecting: error)
                #expect(text.contains("FCM message data for session big-android"), "\(text)")
                #expect(text.contains("FCM accepts at most 4096"), "\(text)")
            }
            #expect(try await h.rows("""
                SELECT count(*)::int8 FROM activity_registration
                WHERE session_id = 'big-android' AND content_state IS NOT NULL AND content_state ? '0'
                """, as: Int64.self) == [0])
        }
    }

    @Test("a service account the token endpoint refuses: Android deliveries wait and retry, and the log says why")
    func refusedAssertion() async throws {
        try await Harness.with { h in
            try await h.withFCM { fcm in
                // A key FCM's token endpoint does not know (a deleted or rotated service-account key).
                let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
                let tokenURI = "https://localhost:\(fcm.port)/token"
                var environment = fcm.environment
                environment["FCM_SERVICE_ACCOUNT_FILE"] = nil
                environment["FCM_SERVICE_ACCOUNT"] = FCMSimulator.serviceAccountJSON(
                    key: stranger, projectID: FCMFixture.projectID, tokenURI: tokenURI)
                try await h.withRelay(environment: environment) {
                    try await h.registerAndroidActivity(session: "refused", token: randomFCMToken())
                    try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
                    try await h.waitUntil("""
                        SELECT count(*) > 0 FROM delivery_log WHERE status = 'retrying' AND session_id = 'refused'
                          AND error LIKE 'no FCM access token: the token endpoint refused%invalid_grant%'
                        """)
                    // Without an access token nothing is sent: the simulator answered only token requests.
                    let answered = fcm.simulator.stats().responses
                    #expect(answered.keys.allSatisfy { $0.hasPrefix("token-") }, "sent without a token: \(answered)")
                    #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self) == [1])
                    let errors = try await h.rows("SELECT error FROM delivery_log", as: String.self)
                    let leaked = errors.contains { $0.contains("PRIVATE KEY") || $0.contains("eyJ") }
                    #expect(!leaked, "no key or assertion logged")
                }
            }
        }
    }

    @Test("FCM refusing even a fresh access token: the message waits with backoff instead of being dropped")
    func credentialsRefused() async throws {
        var faults = FCMSimulatorFaults()
        faults.revokeAccessTokensIssuedBefore = Date().timeIntervalSince1970 + 3600
        let configured = faults
        try await Harness.withFCMRelay(faults: configured) { h, fcm, _ in
            try await h.registerAndroidActivity(session: "revoked", token: randomFCMToken())
            try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 1}'")
            try await h.waitUntil("""
                SELECT count(*) > 0 FROM delivery_log WHERE status = 'retrying' AND provider_status = 401
                  AND error LIKE 'FCM 401 UNAUTHENTICATED: the relay''s credentials were refused; fix the key%'
                """)
            #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self) == [1])
            #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_log WHERE status = 'failed'",
                                     as: Int64.self) == [0])
            // Credentials fixed: the waiting message goes out on its next attempt.
            fcm.simulator.setFaults(FCMSimulatorFaults())
            try await fcm.waitForMessages { $0.count == 1 }
        }
    }

    @Test("an access token is reused until shortly before it expires, then replaced before FCM refuses it")
    func tokenLifetime() async throws {
        var faults = FCMSimulatorFaults()
        faults.accessTokenLifetimeSeconds = 10
        let configured = faults
        try await Harness.withFCMRelay(faults: configured) { h, fcm, _ in
            try await h.registerAndroidActivity(session: "life", token: randomFCMToken())
            var n = 1
            try await h.sql("UPDATE activity_registration SET content_state = jsonb_build_object('n', 1)")
            try await fcm.waitForMessages { $0.count == 1 }
            // The first token was issued before now: 11 s later it has expired, so the last messages must have
            // gone with a second one, got before FCM refused the first. (A lifetime long enough for several messages
            // per token even when a loaded machine takes seconds per message.)
            let firstSent = ContinuousClock.now
            while ContinuousClock.now - firstSent < .seconds(11) {
                n += 1
                try await h.sql("UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))")
                try await fcm.waitForMessages { [n] in $0.count == n }
                try await Task.sleep(for: .milliseconds(100))
            }
            let stats = fcm.simulator.stats()
            let elapsed = (ContinuousClock.now - firstSent) / .seconds(1)
            // One token per 7.5 s of the run (a quarter of the lifetime before its end; more only on a machine so
            // loaded that the loop overran), never one per message, and none used after it expired.
            #expect(stats.assertionsIssuedAt.count >= 2, "\(stats)")
            #expect(Double(stats.assertionsIssuedAt.count) <= 2 + elapsed / 7.5, "\(stats) in \(elapsed) s")
            #expect(stats.assertionsIssuedAt.count < n, "reused: \(stats.assertionsIssuedAt.count) for \(n) messages")
            #expect(stats.responses["401"] == nil, "replaced before it expired")
        }
    }
}
