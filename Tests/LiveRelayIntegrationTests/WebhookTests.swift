import Foundation
import LiveRelayCore
import LiveRelayWebhooks
import Testing

/// README "Activity lifecycle": lifecycle events reach a real HTTP receiver, signed, in order, at least once.
@Suite("Lifecycle webhooks", .timeLimit(.minutes(5)))
struct WebhookTests {
    static let allowPrivate = ["LIVERELAY_WEBHOOK_ALLOW_PRIVATE": "true"]

    /// Registers an endpoint for `url`; returns its secret.
    static func register(_ api: RelayHTTP, url: String) async throws -> String {
        let created = try await api.post("/v1/webhooks", #"{"url":"\#(url)"}"#, headers: RelayHTTP.admin)
        #expect(created.status == 201, "\(created.text)")
        #expect(created["events"]?.arrayValue?.count == 6, "all events by default: \(created.text)")
        guard case .string(let secret)? = created["secret"] else {
            Issue.record("no secret in \(created.text)")
            return ""
        }
        return secret
    }

    @Test("started, updated and ended arrive signed, in order, with the documented body; GET shows no secret")
    func lifecycle() async throws {
        try await Harness.with { h in
            let receiver = WebhookReceiver()
            try await receiver.run { url in
                try await h.withRelayPort(environment: Self.allowPrivate) { port in
                    let api = RelayHTTP(port: port)
                    let secret = try await Self.register(api, url: url)
                    let listed = try await api.request(.GET, "/v1/webhooks", headers: RelayHTTP.admin)
                    #expect(listed.status == 200 && !listed.text.contains(secret) && !listed.text.contains("secret"))

                    let token = try await h.registerActivity(session: "s-hook")
                    try await h.sql(#"""
                        UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-hook'
                        """#)
                    try await h.waitForPushes { $0.contains { $0.token == token && $0.n == 1 } }
                    try await h.sql("UPDATE activity_registration SET status = 'ended' WHERE session_id = 's-hook'")
                    let received = try await receiver.wait { $0.count >= 3 }
                    #expect(received.compactMap(\.type) == [
                        "live_activity.started", "live_activity.updated", "live_activity.ended",
                    ])
                    let now = Int64(Date().timeIntervalSince1970)
                    for event in received {
                        #expect(WebhookSignature.verify(header: event.signature, secret: secret, body: event.body,
                                                        now: now), "signature \(event.signature)")
                        #expect(!WebhookSignature.verify(header: event.signature, secret: secret + "x",
                                                         body: event.body, now: now))
                        let body = event.json.objectValue ?? [:]
                        #expect(body["id"] == .string(event.eventID), "the header's id is the body's")
                        #expect(body["created_at"] != nil)
                        let activity = body["data"]?.objectValue?["activity"]?.objectValue ?? [:]
                        #expect(Set(activity.keys) == ["id", "session_id", "external_id", "user_id", "platform",
                                                       "status"])
                        #expect(activity["session_id"] == .string("s-hook"))
                    }
                    #expect(received[0].json.objectValue?["data"]?.objectValue?["delivery"] == nil)
                    let delivery = received[1].json.objectValue?["data"]?.objectValue?["delivery"]?.objectValue
                    #expect(delivery?["transport"] == .string("apns") && delivery?["status"] == .string("sent"))
                    #expect(delivery?["latency_ms"] != nil && delivery?["latency_ms"] != .null)
                    try await h.waitUntil("""
                        SELECT count(*) = 3 FROM delivery_log WHERE transport = 'webhook' AND status = 'sent'
                        """)
                    // The activity's last delivery and pushes are its pushes, not the requests its events made.
                    let ended = try await api.request(.GET, "/v1/live-activities?status=ended",
                                                      headers: RelayHTTP.admin)
                    let activity = try #require(ended.json?.arrayValue?.first?.objectValue)
                    #expect(activity["lastDelivery"]?.objectValue?["eventType"] == .string("end"), "\(ended.text)")
                    #expect(activity["pushesLastHour"] == .integer(2), "\(ended.text)")
                }
            }
        }
    }

    @Test("a receiver answering 503 gets the same event again (same id) until it takes it; later events wait")
    func retries() async throws {
        try await Harness.with { h in
            let receiver = WebhookReceiver()
            receiver.fail(next: 2)
            try await receiver.run { url in
                try await h.withRelayPort(environment: Self.allowPrivate) { port in
                    _ = try await Self.register(RelayHTTP(port: port), url: url)
                    _ = try await h.registerActivity(session: "s-retry")
                    try await h.sql(#"""
                        UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-retry'
                        """#)
                    let received = try await receiver.wait { $0.count >= 4 }
                    #expect(received.compactMap(\.type) == [
                        "live_activity.started", "live_activity.started", "live_activity.started",
                        "live_activity.updated",
                    ], "the update waited behind the refused start")
                    #expect(Set(received.prefix(3).map(\.eventID)).count == 1, "a retry keeps its event id")
                    let retried = try await h.rows("""
                        SELECT count(*)::int8 FROM delivery_log WHERE transport = 'webhook' AND status = 'retrying'
                          AND provider_status = 503
                        """, as: Int64.self)
                    #expect(retried == [2])
                }
            }
        }
    }

    /// Runs `body` with a relay that has two endpoints registered: one whose receiver holds every request unanswered
    /// (until `release()`), and a healthy one.
    static func withHangingAndHealthy(
        _ h: Harness, _ body: @Sendable (_ hanging: WebhookReceiver, _ healthy: WebhookReceiver) async throws -> Void
    ) async throws {
        let hanging = WebhookReceiver(), healthy = WebhookReceiver()
        hanging.hold()
        try await hanging.run { hangingURL in
            try await healthy.run { healthyURL in
                try await h.withRelayPort(environment: Self.allowPrivate) { port in
                    let api = RelayHTTP(port: port)
                    _ = try await Self.register(api, url: hangingURL)
                    _ = try await Self.register(api, url: healthyURL)
                    try await body(hanging, healthy)
                }
            }
        }
    }

    @Test("an endpoint inserted in SQL without a secret gets a generated one, and its events are signed with it")
    func secretGeneratedInSQL() async throws {
        try await Harness.with { h in
            let receiver = WebhookReceiver()
            try await receiver.run { url in
                try await h.withRelayPort(environment: Self.allowPrivate) { _ in
                    let secret = try #require(try await h.rows(
                        "INSERT INTO webhook_endpoint (url) VALUES (\(url)) RETURNING secret", as: String.self).first)
                    #expect(secret.wholeMatch(of: /whsec_[0-9a-f]{64}/) != nil, "\(secret)")
                    let other = try await h.rows("""
                        INSERT INTO webhook_endpoint (url, enabled) VALUES ('https://example.com/x', false)
                        RETURNING secret
                        """, as: String.self)
                    #expect(other.count == 1 && other != [secret], "each endpoint its own")
                    try await h.registerActivity(session: "s-sql-hook")
                    let event = try #require(try await receiver.wait { !$0.isEmpty }.first)
                    #expect(event.type == "live_activity.started")
                    #expect(WebhookSignature.verify(header: event.signature, secret: secret, body: event.body,
                                                    now: Int64(Date().timeIntervalSince1970)))
                }
            }
        }
    }

    @Test("a receiver that hangs holds up only its own events, with at most 32 of its requests in flight")
    func hangingReceiver() async throws {
        try await Harness.with { h in
            try await Self.withHangingAndHealthy(h) { hanging, healthy in
                // 60 activities in one statement: 60 started events for each endpoint, one chain each.
                try await h.sql("""
                    INSERT INTO activity_registration (secret_hash, session_id, activity_token, bundle_id)
                    SELECT encode(sha256('hang'), 'hex'), 'hang-' || i, md5('hang' || i), 'dev.example'
                    FROM generate_series(1, 60) AS i
                    """)
                // The hanging endpoint's lanes fill up (the most it can hold), and while they stay held the healthy
                // endpoint gets every event.
                try await hanging.waitForInFlight(atLeast: 16)
                #expect(hanging.mostInFlight >= 16, "its lanes were busy: \(hanging.mostInFlight)")
                let received = try await healthy.wait { $0.count >= 60 }
                #expect(Set(received.compactMap(\.activityID)).count == 60)
                #expect(hanging.mostInFlight <= 32, "two workers, 16 lanes each: \(hanging.mostInFlight)")
                hanging.release()
                let late = try await hanging.wait { Set($0.compactMap(\.activityID)).count >= 60 }
                #expect(late.allSatisfy { $0.type == "live_activity.started" })
            }
        }
    }

    @Test("an endpoint that hangs never delays another endpoint's events for the same activity")
    func endpointIsolation() async throws {
        try await Harness.with { h in
            try await Self.withHangingAndHealthy(h) { hanging, healthy in
                let token = try await h.registerActivity(session: "s-iso")
                _ = try await hanging.wait { _ in hanging.mostInFlight >= 1 }
                let written = ContinuousClock.now
                try await h.sql(#"""
                    UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-iso'
                    """#)
                try await h.waitForPushes { $0.contains { $0.token == token && $0.n == 1 } }
                let received = try await healthy.wait { $0.count >= 2 }
                let waited = ContinuousClock.now - written
                #expect(received.compactMap(\.type) == ["live_activity.started", "live_activity.updated"])
                // The hanging endpoint's `started` is still unanswered (the relay waits 10 s for an answer): a
                // healthy endpoint that waited for it would have taken at least that.
                #expect(waited < .seconds(8), "the healthy endpoint waited \(waited) for the other one")
                #expect(hanging.received.compactMap(\.type) == ["live_activity.started"],
                        "the hanging endpoint has only its first request, unanswered")
                hanging.release()
                let late = try await hanging.wait(timeout: .seconds(40)) { $0.count >= 2 }
                #expect(late.compactMap(\.type).suffix(2) == ["live_activity.started", "live_activity.updated"])
            }
        }
    }

    @Test("DELETE /v1/webhooks/{id} answers 204 at once while its events are being sent; they are not sent again")
    func deleteWhileSending() async throws {
        try await Harness.with { h in
            let hanging = WebhookReceiver()
            hanging.hold()
            try await hanging.run { url in
                try await h.withRelayPort(environment: Self.allowPrivate) { port in
                    let api = RelayHTTP(port: port)
                    _ = try await Self.register(api, url: url)
                    let id = try await h.rows("SELECT id FROM webhook_endpoint", as: UUID.self)[0]
                    _ = try await h.registerActivity(session: "s-del")
                    _ = try await h.registerActivity(session: "s-del-2")
                    _ = try await hanging.wait { _ in hanging.mostInFlight >= 1 }
                    // Every lifecycle event of these writes is queued (the pushes' outcomes, recorded by the delivery
                    // worker, queue some): none can come after the DELETE.
                    try await h.waitUntil(timeout: .seconds(30), "SELECT NOT EXISTS (SELECT 1 FROM delivery_outbox)")
                    let deleted = try await api.request(.DELETE, "/v1/webhooks/\(id)", headers: RelayHTTP.admin)
                    #expect(deleted.status == 204, "\(deleted.status) \(deleted.text)")
                    #expect(try await h.rows("SELECT count(*)::int8 FROM webhook_endpoint", as: Int64.self) == [0])
                    #expect(try await h.rows("SELECT count(*)::int8 FROM webhook_outbox", as: Int64.self) == [0],
                            "the endpoint's waiting events went with it")
                    // The requests in flight end at the relay's 10 s answer limit; their outcomes are recorded and
                    // their chains' leases released.
                    try await h.waitUntil(timeout: .seconds(30), """
                        SELECT count(*) = 0 FROM pg_locks WHERE locktype = 'advisory'
                          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                        """)
                    let requests = hanging.received.count
                    hanging.release()
                    // Nothing was rescheduled, logged or sent again for the deleted endpoint.
                    #expect(try await h.rows("SELECT count(*)::int8 FROM webhook_outbox", as: Int64.self) == [0])
                    #expect(try await h.rows("""
                        SELECT count(*)::int8 FROM delivery_log WHERE transport = 'webhook'
                        """, as: Int64.self) == [0])
                    #expect(hanging.received.count == requests)
                }
            }
        }
    }

    @Test("an answer whose head comes at once but whose body never ends is given up after 10 s, not waited on")
    func stalledBody() async throws {
        let receiver = WebhookReceiver()
        receiver.stallBodies()
        try await receiver.run { url in
            let transport = WebhookTransport(allowPrivate: true)
            let started = ContinuousClock.now
            let result = await transport.send(WebhookRequest(
                url: url, secret: "whsec_stall_0123456789", eventID: UUID(), body: #"{"id":"x"}"#))
            let waited = ContinuousClock.now - started
            await transport.shutdown()
            #expect(!result.delivered && result.error == "no answer: no answer within 10 s", "\(result)")
            #expect(waited < .seconds(20), "gave up after \(waited)")
            #expect(receiver.received.count == 1)
        }
    }

    @Test("a URL that resolves to loopback is refused unless allowed; bad events and secrets are refused")
    func refusals() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let loopback = try await api.post("/v1/webhooks", #"{"url":"http://127.0.0.1:9/hook"}"#,
                                                  headers: RelayHTTP.admin)
                #expect(loopback.status == 400 && loopback.text.contains("loopback")
                        && loopback.text.contains("LIVERELAY_WEBHOOK_ALLOW_PRIVATE"), "\(loopback.text)")
                let privateNet = try await api.post("/v1/webhooks", #"{"url":"http://10.1.2.3/hook"}"#,
                                                    headers: RelayHTTP.admin)
                #expect(privateNet.status == 400 && privateNet.text.contains("private"), "\(privateNet.text)")
                let scheme = try await api.post("/v1/webhooks", #"{"url":"ftp://example.com/x"}"#,
                                                headers: RelayHTTP.admin)
                #expect(scheme.status == 400 && scheme.text.contains("http"), "\(scheme.text)")
                let shape = try await api.post("/v1/webhooks", #"{"url":"https://example.com/x#top"}"#,
                                               headers: RelayHTTP.admin)
                #expect(shape.status == 400 && shape.text.contains("no user name, password or fragment"),
                        "\(shape.text)")
                let events = try await api.post("/v1/webhooks",
                    #"{"url":"https://example.com/x","events":["live_activity.exploded"]}"#, headers: RelayHTTP.admin)
                #expect(events.status == 400 && events.text.contains("live_activity.started"), "\(events.text)")
                let secret = try await api.post("/v1/webhooks", #"{"url":"https://example.com/x","secret":"short"}"#,
                                                headers: RelayHTTP.admin)
                #expect(secret.status == 400 && secret.text.contains("16"), "\(secret.text)")
                let anonymous = try await api.post("/v1/webhooks", #"{"url":"https://example.com/x"}"#)
                #expect(anonymous.status == 401)
                let missing = try await api.request(.DELETE, "/v1/webhooks/\(UUID())", headers: RelayHTTP.admin)
                #expect(missing.status == 404)
            }
        }
    }
}
