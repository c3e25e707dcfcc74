import FCMSimulator
import Foundation
import LiveRelayCore
import Testing

/// Android activities and devices delivered through FCM HTTP v1, over real HTTP/2 + TLS against `FCMSimulator`.
@Suite("SQL write → FCM message")
struct FCMDeliveryTests {
    @Test("one UPDATE of an iOS and an Android activity: one APNs push and one FCM data message, as the README says")
    func bothPlatforms() async throws {
        try await Harness.withFCMRelay { h, fcm, _ in
            let iosToken = try await h.registerActivity(session: "both")
            let androidToken = randomFCMToken()
            // One activity per (secret, session): the iPhone's under another secret, same session.
            try await h.sql(
                "UPDATE activity_registration SET secret_hash = \(secretHash("ios")) WHERE session_id = 'both'")
            let id = try await h.registerAndroidActivity(session: "both", token: androidToken)
            try await h.sql("""
                UPDATE activity_registration SET content_state = '{"status": "done", "step": 2}'
                WHERE session_id = 'both'
                """)
            let message = try #require(try await fcm.waitForMessages { $0.count == 1 }.first)
            let push = try #require(try await h.waitForPushes { $0.count == 1 }.first)
            #expect(push.token == iosToken && push.event == "update")
            #expect(message.token == androidToken)
            #expect(message.data["liveRelayActivityId"] == id.uuidString.lowercased())
            #expect(message.data["liveRelayEvent"] == "update")
            #expect(message.data["liveRelaySessionId"] == "both")
            let state = try JSONValue(parsing: try #require(message.data["liveRelayContentState"]))
            #expect(state == .object(["status": .string("done"), "step": .integer(2)]))
            let timestamp = try #require(message.data["liveRelayTimestamp"].flatMap { Int64($0) })
            #expect(abs(timestamp - Int64(Date().timeIntervalSince1970)) < 60)
            #expect(message.notification == nil, "a Live Update is data only: the app renders its notification")
            let options = try #require(message.android?.objectValue)
            #expect(options["priority"] == .string("high"))
            #expect(options["collapse_key"] == .string(id.uuidString.lowercased()))
            // An hour from when the batch was planned, counted down when sent (so a second boundary in between, or a
            // retry, shortens it): never more than 3600 s, and no less than a few seconds under it here.
            let ttl = try #require(options["ttl"].flatMap { if case .string(let t) = $0 { t } else { nil } })
            #expect(ttl.hasSuffix("s") && (3590...3600).contains(Int(ttl.dropLast()) ?? 0), "\(ttl)")
            try await h.waitUntil("""
                SELECT count(*) = 2 FROM delivery_log WHERE status = 'sent'
                  AND ((transport = 'fcm' AND push_type = 'data' AND provider_status = 200 AND apns_status IS NULL)
                    OR (transport = 'apns' AND push_type = 'liveactivity' AND apns_status = 200))
                """)
            #expect(fcm.simulator.stats().assertionsIssuedAt.count == 1)
        }
    }

    @Test("100 rapid updates to one Android activity arrive in strictly increasing order, ending with the last")
    func orderKept() async throws {
        try await Harness.withFCMRelay { h, fcm, _ in
            let token = randomFCMToken()
            try await h.registerAndroidActivity(session: "rapid", token: token)
            try await h.withConnection { connection in
                for n in 1...100 {
                    try await connection.query("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                        WHERE session_id = 'rapid'
                        """, logger: h.logger)
                }
            }
            let messages = try await fcm.waitForMessages { messages in
                messages.last.flatMap { $0.data["liveRelayContentState"] } == #"{"n":100}"#
            }
            let numbers = try messages.map { message -> Int64 in
                guard case .object(let state) = try JSONValue(parsing: message.data["liveRelayContentState"] ?? ""),
                      case .integer(let n)? = state["n"] else { throw Harness.TimedOut() }
                return n
            }
            #expect(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "\(numbers)")
            let stamps = messages.compactMap { $0.data["liveRelayTimestamp"].flatMap { Int64($0) } }
            #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 <= $1 })
            #expect(fcm.simulator.stats().assertionsIssuedAt.count == 1, "one access token for the whole burst")
        }
    }

    @Test("UNREGISTERED, SENDER_ID_MISMATCH, INVALID_ARGUMENT on message.token invalidate; other 400s keep the token")
    func deadTokens() async throws {
        let tokens = (0..<4).map { _ in randomFCMToken() }
        var faults = FCMSimulatorFaults()
        faults.tokenErrors = [
            tokens[0]: "UNREGISTERED", tokens[1]: "SENDER_ID_MISMATCH", tokens[2]: "INVALID_ARGUMENT",
            tokens[3]: "INVALID_ARGUMENT:message.data",
        ]
        let configured = faults
        try await Harness.withFCMRelay(faults: configured) { h, fcm, _ in
            for (index, token) in tokens.enumerated() {
                try await h.registerAndroidActivity(session: "dead\(index)", token: token)
            }
            try await h.sql("UPDATE activity_registration SET content_state = '{\"status\": \"x\"}'")
            try await h.waitUntil("SELECT count(*) = 4 FROM delivery_log WHERE status = 'failed' AND transport = 'fcm'")
            let statuses = try await h.rows(
                "SELECT session_id || ' ' || status FROM activity_registration ORDER BY session_id", as: String.self)
            #expect(statuses == ["dead0 invalidated", "dead1 invalidated", "dead2 invalidated", "dead3 active"])
            let reasons = try await h.rows("""
                SELECT session_id || ' ' || provider_status || ' ' || provider_reason
                FROM delivery_log ORDER BY session_id
                """, as: String.self)
            #expect(reasons == ["dead0 404 UNREGISTERED", "dead1 403 SENDER_ID_MISMATCH", "dead2 400 INVALID_ARGUMENT",
                                "dead3 400 INVALID_ARGUMENT"])
            // An invalidated activity's token is never used again: a later write queues nothing for it.
            try await h.sql(
                "UPDATE activity_registration SET content_state = '{\"status\": \"y\"}' WHERE session_id = 'dead0'")
            #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self) == [0])
        }
    }

    @Test("429 and 503 are retried with backoff honouring Retry-After until every final state is delivered")
    func retries() async throws {
        var faults = FCMSimulatorFaults()
        faults.rate503 = 0.2
        faults.rate429 = 0.1
        faults.retryAfterSeconds = 1
        let configured = faults
        // Backoff capped at 2 s: at 30% errors a delivery may need several attempts, and the default cap (60 s) would
        // make a rare unlucky run of them outlast the test.
        let capped = ["LIVERELAY_RETRY_MAX_DELAY_MS": "2000"]
        try await Harness.withFCMRelay(faults: configured, environment: capped) { h, fcm, _ in
            // 40 activities: with 30 % of answers faulty, none faulty at all is a 1-in-1,600,000 run (with 10 it
            // was 1 in 35, and the check that something was retried failed then).
            let tokens = (0..<40).map { _ in randomFCMToken() }
            for (index, token) in tokens.enumerated() {
                try await h.registerAndroidActivity(session: "retry\(index)", token: token)
            }
            try await h.sql("UPDATE activity_registration SET content_state = '{\"final\": true}'")
            let messages = try await fcm.waitForMessages(timeout: .seconds(40)) { messages in
                let final = messages.filter { $0.data["liveRelayContentState"] == #"{"final":true}"# }
                return Set(final.map(\.token)) == Set(tokens)
            }
            #expect(messages.count == tokens.count, "nothing sent twice")
            let retried = try await h.rows("""
                SELECT count(*)::int8 FROM delivery_log WHERE status = 'retrying' AND transport = 'fcm'
                  AND provider_status IN (429, 503)
                """, as: Int64.self)
            #expect(retried.first ?? 0 > 0)
            // Retry-After: 1 s is a lower bound on every wait after a 429/503.
            let gaps = try await h.rows("""
                SELECT coalesce(min(extract(epoch FROM o.created_at - r.created_at)), 9)::float8
                FROM delivery_log r JOIN delivery_log o ON o.outbox_id = r.outbox_id AND o.id > r.id
                WHERE r.status = 'retrying'
                  AND o.id = (SELECT min(id) FROM delivery_log x WHERE x.outbox_id = r.outbox_id AND x.id > r.id)
                """, as: Double.self)
            #expect(gaps.first ?? 0 >= 0.95, "\(gaps)")
        }
    }

    @Test("a revoked access token (401) is replaced once and the message resent; tokens are otherwise reused")
    func accessTokens() async throws {
        try await Harness.withFCMRelay { h, fcm, _ in
            try await h.registerAndroidActivity(session: "auth", token: randomFCMToken())
            for n in 1...5 {
                try await h.sql("UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))")
                try await fcm.waitForMessages { $0.count == n }
            }
            #expect(fcm.simulator.stats().assertionsIssuedAt.count == 1)
            var faults = FCMSimulatorFaults()
            // Every token issued until now is revoked; the one the relay mints after FCM's 401 is good.
            faults.revokeAccessTokensIssuedBefore = Date().timeIntervalSince1970
            fcm.simulator.setFaults(faults)
            try await h.sql("UPDATE activity_registration SET content_state = '{\"n\": 6}'")
            try await fcm.waitForMessages { $0.count == 6 }
            let stats = fcm.simulator.stats()
            #expect(stats.assertionsIssuedAt.count == 2)
            #expect(stats.responses["401"] == 1)
            try await h.waitUntil("SELECT count(*) = 6 FROM delivery_log WHERE status = 'sent' AND transport = 'fcm'")
        }
    }
}
