import APNsSimulator
import Crypto
import Foundation
import LiveRelayCore
import PostgresNIO
import Testing

/// What happens when APNs refuses, fails or the relay is away: nothing committed is lost, dead tokens go quiet.
@Suite("Delivery under failure")
struct FailureHandlingTests {
    @Test("410 Unregistered invalidates the activity, and nothing more is sent to its token")
    func unregisteredTokenIsInvalidated() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                let dead = try await h.registerActivity(session: "s-dead")
                let alive = try await h.registerActivity(session: "s-alive")
                var faults = SimulatorFaults()
                faults.tokenErrors[dead] = "Unregistered"
                h.simulator.setFaults(faults)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-dead'"#)
                try await h.waitUntil(
                    "SELECT status = 'invalidated' FROM activity_registration WHERE session_id = 's-dead'")
                try await h.waitUntil("SELECT count(*) = 1 FROM delivery_log WHERE session_id = 's-dead'")
                let log = try await h.rows("""
                    SELECT status || ' ' || apns_status || ' ' || apns_reason FROM delivery_log
                    WHERE session_id = 's-dead'
                    """, as: String.self)
                #expect(log == ["failed 410 Unregistered"])

                // Later writes to the dead activity are silent; a write to a live one still goes out.
                let responsesBefore = h.simulator.responseCounts()["410"]
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 2}' WHERE session_id = 's-dead'"#)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 3}' WHERE session_id = 's-alive'"#)
                try await h.waitForPushes { $0.contains { $0.token == alive } }
                try await h.waitUntil("SELECT count(*) = 0 FROM delivery_outbox")
                #expect(h.simulator.responseCounts()["410"] == responsesBefore)
                #expect(!h.simulator.pushes().contains { $0.token == dead })
            }
        }
    }

    @Test("a sandbox token sent to production is retried on the sandbox, which is then stored")
    func badDeviceTokenTriesOtherEnvironment() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                let token = try await h.registerActivity(session: "s-sandbox", env: "production")
                var faults = SimulatorFaults()
                faults.sandboxTokens = [token]
                h.simulator.setFaults(faults)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-sandbox'"#)
                let push = try #require(try await h.waitForPushes { $0.count == 1 }.first)
                #expect(push.environment == "sandbox")
                try await h.waitUntil(
                    "SELECT apns_env = 'sandbox' FROM activity_registration WHERE session_id = 's-sandbox'")
            }
        }
    }

    @Test("a token bad in both environments is invalidated")
    func badDeviceTokenEverywhereIsInvalidated() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                let token = try await h.registerActivity(session: "s-bad-token")
                var faults = SimulatorFaults()
                faults.tokenErrors[token] = "BadDeviceToken"
                h.simulator.setFaults(faults)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-bad-token'"#)
                try await h.waitUntil(
                    "SELECT status = 'invalidated' FROM activity_registration WHERE session_id = 's-bad-token'")
                #expect(h.simulator.responseCounts()["400"] == 2)
            }
        }
    }

    @Test("a token written by SQL that changes APNs' path fails once, with Apple's 404 BadPath recorded")
    func tokenThatChangesThePath() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.registerActivity(session: "s-path", token: "ab/../cd")
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-path'"#)
                try await h.waitUntil("SELECT count(*) = 1 FROM delivery_log WHERE session_id = 's-path'")
                let row = try await h.rows("""
                    SELECT status || ' ' || apns_status || ' ' || apns_reason
                    FROM delivery_log WHERE session_id = 's-path'
                    """, as: String.self)
                #expect(row == ["failed 404 BadPath"])
                #expect(h.simulator.responseCounts()["404"] == 1)
            }
        }
    }

    @Test("503 and 429 answers are retried with backoff until every final state is delivered")
    func transientErrorsAreRetried() async throws {
        try await Harness.with { h in
            var faults = SimulatorFaults()
            faults.rate503 = 0.3
            faults.rate429 = 0.1
            faults.retryAfterSeconds = 0
            h.simulator.setFaults(faults)
            // Backoff capped at 400 ms so the test does not wait out long (correct) delays.
            try await h.withRelay(environment: [
                "LIVERELAY_RETRY_MAX_DELAY_MS": "400", "LIVERELAY_RETRY_MAX_ATTEMPTS": "40",
            ]) {
                var registered: [String: String] = [:]
                for index in 0..<20 {
                    registered["s-retry-\(index)"] = try await h.registerActivity(session: "s-retry-\(index)")
                }
                let tokens = registered
                for round in 1...3 {
                    try await h.sql("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(round))
                        WHERE session_id LIKE 's-retry-%'
                        """)
                }
                let pushes = try await h.waitForPushes(timeout: .seconds(40)) { pushes in
                    tokens.values.allSatisfy { token in pushes.last { $0.token == token }?.n == 3 }
                }
                #expect(
                    h.simulator.responseCounts()["503", default: 0] + h.simulator.responseCounts()["429", default: 0]
                        > 0)
                // Per activity, states arrive in order.
                for token in tokens.values {
                    let states = pushes.filter { $0.token == token }.compactMap(\.n)
                    #expect(states == states.sorted() && Set(states).count == states.count)
                }
                try await h.waitUntil("SELECT count(*) = 0 FROM delivery_outbox")
                let retrying = try await h.rows(
                    "SELECT count(*)::int8 FROM delivery_log WHERE status = 'retrying'", as: Int64.self)
                #expect(retrying.first ?? 0 > 0)
            }
        }
    }

    @Test("GOAWAY and connection resets mid-request: the relay moves to new connections; nothing lost, order kept")
    func resetsAndGoAway() async throws {
        try await Harness.with { h in
            try await h.withRelay(environment: [
                "LIVERELAY_RETRY_MAX_DELAY_MS": "400", "LIVERELAY_RETRY_MAX_ATTEMPTS": "40",
            ]) {
                var registered: [String: String] = [:]
                for index in 0..<30 {
                    registered["s-conn-\(index)"] = try await h.registerActivity(session: "s-conn-\(index)")
                }
                let tokens = registered

                // Phase 1: GOAWAY. The relay opens no stream on a connection after its GOAWAY; streams the server
                // did not take are resent at once. (Hummingbird may close the connection before the last answers
                // leave; those requests count as unanswered and are retried, so a state can arrive twice.)
                // Each round is delivered before the next, so every round makes 30 requests: 120 per phase, at a
                // fault rate of 10% (the chance of no fault at all is 0.9^120, about 3 in a million).
                func deliverRounds(_ rounds: ClosedRange<Int>) async throws -> [RecordedPush] {
                    var pushes: [RecordedPush] = []
                    for round in rounds {
                        try await h.sql("""
                            UPDATE activity_registration SET content_state = jsonb_build_object('n', \(round))
                            WHERE session_id LIKE 's-conn-%'
                            """)
                        pushes = try await h.waitForPushes(timeout: .seconds(40)) { pushes in
                            tokens.values.allSatisfy { token in pushes.last { $0.token == token }?.n == Int64(round) }
                        }
                    }
                    return pushes
                }
                var faults = SimulatorFaults()
                faults.goAwayRate = 0.1
                h.simulator.setFaults(faults)
                let first = try await deliverRounds(1...4)
                #expect(h.simulator.responseCounts()["goaway", default: 0] > 0)
                for token in tokens.values {
                    let states = first.filter { $0.token == token }.compactMap(\.n)
                    #expect(states == states.sorted() && states.last == 4, "\(states)")
                }

                // Phase 2: a reset loses the answers of requests APNs may already have taken; those are sent
                // again (at least once), still in order, and the last state always arrives.
                faults = SimulatorFaults()
                faults.resetRate = 0.1
                h.simulator.setFaults(faults)
                let second = try await deliverRounds(5...8).dropFirst(first.count)
                #expect(h.simulator.responseCounts()["reset", default: 0] > 0)
                for token in tokens.values {
                    let states = second.filter { $0.token == token }.compactMap(\.n)
                    #expect(states == states.sorted() && states.last == 8, "\(states)")
                }
                // A request whose connection went quiet is retried after 10 s without answers: allow for that on
                // a loaded machine.
                try await h.waitUntil(timeout: .seconds(45), "SELECT count(*) = 0 FROM delivery_outbox")
            }
        }
    }

    @Test("100 rapid updates to one activity arrive in strictly increasing order, ending with the last")
    func rapidUpdatesKeepOrder() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.registerActivity(session: "s-rapid")
                try await h.withConnection { connection in
                    for n in 1...100 {
                        try await connection.query("""
                            UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                            WHERE session_id = 's-rapid'
                            """, logger: h.logger)
                    }
                }
                let pushes = try await h.waitForPushes { $0.last?.n == 100 }
                let states = pushes.compactMap(\.n)
                #expect(zip(states, states.dropFirst()).allSatisfy { $0 < $1 })
                let timestamps = pushes.compactMap(\.timestamp)
                #expect(zip(timestamps, timestamps.dropFirst()).allSatisfy { $0 <= $1 })
                // One provider token serves every request.
                #expect(h.simulator.providerTokenIssueTimes().count == 1)
            }
        }
    }

    @Test("writes committed while the relay is down are all delivered when it starts")
    func writesWhileDownAreDelivered() async throws {
        try await Harness.with { h in
            var registered: [String] = []
            for index in 0..<20 { registered.append(try await h.registerActivity(session: "s-down-\(index)")) }
            let tokens = registered
            for n in 1...10 {
                try await h.sql("""
                    UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                    WHERE session_id LIKE 's-down-%'
                    """)
            }
            // Queued with the writes, durable while no relay runs: one row per activity and write.
            let queued = try await h.rows(
                "SELECT count(*)::int8 FROM delivery_outbox WHERE session_id LIKE 's-down-%'", as: Int64.self)
            #expect(queued == [200])
            try await h.withRelay {
                let pushes = try await h.waitForPushes { pushes in
                    tokens.allSatisfy { token in pushes.contains { $0.token == token && $0.n == 10 } }
                }
                // Coalesced: the relay sent the latest state, not 200 pushes.
                #expect(pushes.count == 20)
            }
        }
    }

    @Test("a relay whose APNs key Apple refuses loses nothing: a push and a channel wait for the right key")
    func refusedKeyLosesNothing() async throws {
        try await Harness.with { h in
            try await h.registerActivity(session: "s-key")
            let wrongKey = P256.Signing.PrivateKey().pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
            let (wrong, _) = try await RelayProcess.serve(h, environment: ["APNS_PRIVATE_KEY": wrongKey])
            try await h.sql(#"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-key'"#)
            try await h.sql("INSERT INTO broadcast_channel (name, content_state) VALUES ('c-key', '{\"n\": 1}')")
            try await h.waitUntil("""
                SELECT count(DISTINCT coalesce(session_id, channel)) = 2 FROM delivery_log
                WHERE status = 'retrying' AND apns_reason = 'InvalidProviderToken'
                """)
            wrong.stop(signal: SIGTERM)
            // Said once (a minute apart at most) at error level, whatever the number of pushes and workers.
            let alarm = "APNs refuses the relay's key (InvalidProviderToken): pushes wait with backoff"
            let said = wrong.output.split(separator: "\n").filter { $0.contains(" error ") && $0.contains(alarm) }
            #expect(said.count == 1, "\(wrong.output)")
            #expect(try await h.rows("""
                SELECT count(*)::int8 FROM delivery_log WHERE status = 'failed'
                UNION ALL SELECT count(*)::int8 FROM broadcast_channel WHERE status = 'failed'
                """, as: Int64.self) == [0, 0])
            #expect(h.simulator.pushes().isEmpty)
            // The operator fixes the key: what waited goes out.
            try await h.withRelay {
                try await h.waitForPushes { $0.contains { $0.n == 1 } }
                try await h.waitUntil("""
                    SELECT apns_channel_id IS NOT NULL AND status = 'active' FROM broadcast_channel WHERE name = 'c-key'
                    """)
            }
        }
    }

    @Test("ExpiredProviderToken makes the relay mint a new provider token once and resend")
    func expiredProviderTokenIsRefreshed() async throws {
        try await Harness.with { h in
            try await h.withRelay {
                try await h.registerActivity(session: "s-jwt")
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-jwt'"#)
                let first = try #require(try await h.waitForPushes { $0.count == 1 }.first)
                // Wait for the clock to pass the first token's second, then declare that token expired.
                while Int64(Date().timeIntervalSince1970) <= first.providerTokenIssuedAt {
                    try await Task.sleep(for: .milliseconds(50))
                }
                var faults = SimulatorFaults()
                faults.expireProviderTokensIssuedBefore = first.providerTokenIssuedAt + 1
                h.simulator.setFaults(faults)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 2}' WHERE session_id = 's-jwt'"#)
                let second = try #require(try await h.waitForPushes { $0.count == 2 }.last)
                #expect(second.n == 2)
                #expect(second.providerTokenIssuedAt > first.providerTokenIssuedAt)
                #expect(h.simulator.responseCounts()["403"] == 1)
                #expect(h.simulator.providerTokenIssueTimes().count == 2)
            }
        }
    }
}
