import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// What dashboards and backends use: REST views, the generic Live Activity API, /metrics and /ready.
@Suite("Dashboard and admin API")
struct DashboardAPITests {
    @Test("views and list filters: checked against the columns, bound, refused by name when they hold U+0000")
    func views() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                try await h.registerActivity(session: "v1")
                try await h.registerActivity(session: "v2")
                try await h.sql("UPDATE activity_registration SET status = 'ended' WHERE session_id = 'v2'")
                try await h.waitUntil("SELECT count(*) = 0 FROM delivery_outbox")
                #expect(try await api.request(.GET, "/v1/views/activities").status == 401)
                let active = try await api.request(
                    .GET, "/v1/views/activities?status=eq.active&order=session_id.desc&limit=10",
                    headers: RelayHTTP.admin)
                #expect(active.status == 200)
                #expect(active.json?.arrayValue?.compactMap { $0.objectValue?["session_id"] } == [.string("v1")])
                let stats = try await api.request(
                    .GET, "/v1/views/delivery_stats?status=eq.sent", headers: RelayHTTP.admin)
                #expect(stats.json?.arrayValue?.first?.objectValue?["deliveries"] == .integer(1))
                for name in ["devices", "recent_deliveries", "queue_depth"] {
                    #expect(
                        try await api.request(.GET, "/v1/views/\(name)", headers: RelayHTTP.admin).status == 200,
                        "\(name)")
                }
                let injection = try await api.request(
                    .GET, "/v1/views/activities?session_id=eq.x'%3B%20DROP%20TABLE%20delivery_log%3B--",
                    headers: RelayHTTP.admin)
                #expect(injection.status == 200 && injection.json == .array([]))
                #expect(
                    try await api.request(.GET, "/v1/views/activities?nope=eq.1", headers: RelayHTTP.admin).status
                        == 400)
                #expect(
                    try await api.request(.GET, "/v1/views/activities?order=secret_hash.asc", headers: RelayHTTP.admin)
                        .status == 400)
                #expect(
                    try await api.request(
                        .GET, "/v1/views/activities?created_at=gt.yesterday-ish", headers: RelayHTTP.admin
                    ).status == 400)
                #expect(try await api.request(.GET, "/v1/views/pg_shadow", headers: RelayHTTP.admin).status == 404)
                // What the client sent is quoted in part, and the sentence names what there is.
                let long = String(repeating: "z", count: 2000)
                let noView = try await api.request(.GET, "/v1/views/\(long)", headers: RelayHTTP.admin)
                #expect(noView.status == 404
                        && noView.text.contains("no view \(long.prefix(80))…; views: activities,"), "\(noView.text)")
                let noColumn = try await api.request(
                    .GET, "/v1/views/activities?\(long)=eq.1", headers: RelayHTTP.admin)
                #expect(noColumn.status == 400 && noColumn.text.count < 1000
                        && noColumn.text.contains("\(long.prefix(80))… is not a column of this view (columns: "),
                        "\(noColumn.text)")
                // A text filter holding U+0000 is refused by its name (PostgreSQL's own refusal names no parameter).
                let withNUL = [("/v1/views/activities?session_id=eq.a%00", "session_id"),
                               ("/v1/deliveries?session_id=a%00b", "session_id"),
                               ("/v1/live-activities?externalId=%00", "externalId"),
                               ("/v1/live-activities?userId=a%00", "userId")]
                for (path, name) in withNUL {
                    let refused = try await api.request(.GET, path, headers: RelayHTTP.admin)
                    #expect(refused.status == 400 && refused.text.contains("\(name) must not contain NUL"),
                            "\(path): \(refused.text)")
                }
                // Every list route reads limit and offset alike, and says the range when they are bad.
                let badNumbers = [("/v1/devices?limit=ten", "limit must be a whole number from 1 to 1000"),
                                  ("/v1/channels?limit=all", "limit must be a whole number from 1 to 1000"),
                                  ("/v1/deliveries?limit=many", "limit must be a whole number from 1 to 500"),
                                  ("/v1/live-activities?offset=-1", "offset must be a whole number from 0 to"),
                                  ("/v1/views/activities?limit=1001", "limit must be a whole number from 1 to 1000")]
                for (path, sentence) in badNumbers {
                    let refused = try await api.request(.GET, path, headers: RelayHTTP.admin)
                    #expect(refused.status == 400 && refused.text.contains(sentence), "\(path): \(refused.text)")
                }
                // Every listing's choices are refused by one sentence: what is allowed, and what was sent.
                let badChoices = [
                    ("/v1/deliveries?transport=pigeon",
                     #"transport must be apns, fcm, webhook, apns-broadcast or fcm-topic, not \"pigeon\""#),
                    ("/v1/deliveries?status=lost",
                     #"status must be sent, failed, coalesced, retrying or skipped, not \"lost\""#),
                    ("/v1/live-activities?status=paused",
                     #"status must be active, ended or invalidated, not \"paused\""#),
                    ("/v1/live-activities?platform=web", #"platform must be ios or android, not \"web\""#),
                    ("/v1/channels?status=open", #"status must be active, ended, deleted or failed, not \"open\""#),
                    // (Found by schemathesis: a NUL quoted back made an error no JSON schema of text accepts.)
                    ("/v1/deliveries?status=lo%00st", "status must not contain NUL characters"),
                    ("/v1/deliveries?transport=a%01b", #"or fcm-topic, not \"a\\u{1}b\""#)]
                for (path, sentence) in badChoices {
                    let refused = try await api.request(.GET, path, headers: RelayHTTP.admin)
                    #expect(refused.status == 400 && refused.text.contains(sentence), "\(path): \(refused.text)")
                }
                // An empty choice is no filter, on every listing (as ?session_id= is): the answer is the whole list.
                for path in ["/v1/deliveries", "/v1/live-activities", "/v1/channels"] {
                    let unfiltered = try await api.request(.GET, path, headers: RelayHTTP.admin)
                    let empty = try await api.request(.GET, path + "?status=", headers: RelayHTTP.admin)
                    #expect(empty.status == 200 && empty.json == unfiltered.json && unfiltered.json != nil,
                            "\(path): \(empty.text)")
                }
                #expect(try await h.rows("SELECT count(*)::int8 FROM delivery_log", as: Int64.self) == [1])
            }
        }
    }

    @Test("the generic Live Activity API registers, updates with an alert, rotates the token and ends")
    func liveActivities() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let token = randomToken()
                let created = try await api.post("/v1/live-activities", #"""
                    {"platform":"ios","token":"\#(token)","activityType":"OrderAttributes",
                     "attributes":{"orderId":"1234"}, "contentState":{"status":"preparing","minutesAway":30},
                     "externalId":"order-1234","userId":"user-42"}
                    """#, headers: RelayHTTP.admin)
                #expect(created.status == 201)
                guard case .string(let id)? = created["id"] else { Issue.record("no id: \(created.text)"); return }
                #expect(created["externalId"] == .string("order-1234"))
                let listed = try await api.request(.GET, "/v1/live-activities?userId=user-42", headers: RelayHTTP.admin)
                #expect(listed.json?.arrayValue?.count == 1)

                let patched = try await api.request(.PATCH, "/v1/live-activities/\(id)", json: #"""
                    {"contentState":{"status":"out_for_delivery","minutesAway":10},
                     "alert":{"title":"On its way","body":"10 min"},"staleDate":2000000000}
                    """#, headers: RelayHTTP.admin)
                #expect(patched.status == 200 && patched["push"] == .string("queued"), "\(patched.text)")
                let update = try #require(try await h.waitForPushes { !$0.isEmpty }.first)
                #expect(update.contentState == ["status": .string("out_for_delivery"), "minutesAway": .integer(10)])
                #expect(update.aps["alert"] == .object(["title": .string("On its way"), "body": .string("10 min")]))
                #expect(update.aps["stale-date"] == .integer(2_000_000_000) && update.priority == "10")

                // The same state again, without an alert, sends nothing, and the answer says so (a stale date alone
                // goes with the next update).
                let again = try await api.request(.PATCH, "/v1/live-activities/\(id)", json: #"""
                    {"contentState":{"minutesAway":10,"status":"out_for_delivery"},"staleDate":2000000050}
                    """#, headers: RelayHTTP.admin)
                #expect(again.status == 200 && again["push"] == .string("unchanged"), "\(again.text)")
                #expect(again["contentState"] == patched["contentState"] && again["id"] == .string(id))

                let newToken = randomToken()
                #expect(
                    try await api.request(
                        .PUT, "/v1/live-activities/\(id)/token", json: #"{"token":"\#(newToken)"}"#,
                        headers: RelayHTTP.admin
                    ).status == 200)
                // The new token gets the current state at once.
                let current = try #require(try await h.waitForPushes { $0.count == 2 }.last)
                #expect(current.token == newToken && current.event == "update")
                let ended = try await api.request(
                    .DELETE, "/v1/live-activities/\(id)?dismissalDate=2000000100", headers: RelayHTTP.admin)
                #expect(ended.status == 200 && ended["status"] == .string("ended"))
                let end = try #require(try await h.waitForPushes { $0.count == 3 }.last)
                #expect(
                    end.token == newToken && end.event == "end" && end.aps["dismissal-date"] == .integer(2_000_000_100))
                let numberBody = try await api.request(.PATCH, "/v1/live-activities/\(id)",
                    json: #"{"contentState":{"n":9},"alert":{"body":5}}"#, headers: RelayHTTP.admin)
                #expect(numberBody.status == 400 && numberBody.text.contains("alert.body must be a string"),
                        "\(numberBody.text)")
                // An ended activity exists but takes no update: a conflict with its state, not a missing resource.
                let late = try await api.request(
                    .PATCH, "/v1/live-activities/\(id)", json: #"{"contentState":{"n":9}}"#, headers: RelayHTTP.admin)
                #expect(late.status == 409 && late.text.contains("is ended, not active"), "\(late.text)")

                // Sendora's and most clients' name for the token, accepted too; two different values are refused.
                let pushToken = randomToken()
                let byPushToken = try await api.post("/v1/live-activities",
                    #"{"pushToken":"\#(pushToken)","contentState":{"n":0}}"#, headers: RelayHTTP.admin)
                #expect(byPushToken.status == 201, "\(byPushToken.text)")
                #expect(byPushToken["tokenSuffix"] == .string(String(pushToken.suffix(8))), "\(byPushToken.text)")
                let differing = #"{"token":"\#(randomToken())","pushToken":"\#(randomToken())","contentState":{}}"#
                let both = try await api.post("/v1/live-activities", differing, headers: RelayHTTP.admin)
                #expect(both.status == 400 && both.text.contains("token and pushToken differ"), "\(both.text)")
                for name in ["pushToken", "fcmToken"] {
                    let empty = #"{"token":"\#(randomToken())","\#(name)":"","contentState":{}}"#
                    let refused = try await api.post("/v1/live-activities", empty, headers: RelayHTTP.admin)
                    #expect(refused.status == 400 && refused.text.contains("\(name) must not be empty"),
                            "\(refused.text)")
                }
                let equal = #"{"token":"\#(pushToken)","pushToken":"\#(pushToken)","contentState":{}}"#
                let same = try await api.post("/v1/live-activities", equal, headers: RelayHTTP.admin)
                #expect(same.status == 201, "\(same.text)")
                let neither = try await api.post("/v1/live-activities", #"{"contentState":{}}"#,
                                                 headers: RelayHTTP.admin)
                // No token at all: the activity waits for one.
                #expect(neither.status == 201 && neither["awaitingToken"] == .bool(true), "\(neither.text)")
                guard case .string(let pushID)? = byPushToken["id"] else { Issue.record("no id"); return }
                let rotated = try await api.request(.PUT, "/v1/live-activities/\(pushID)/token",
                    json: #"{"pushToken":"\#(newToken)"}"#, headers: RelayHTTP.admin)
                #expect(rotated.status == 200, "\(rotated.text)")
                #expect(rotated["tokenSuffix"] == .string(String(newToken.suffix(8))), "\(rotated.text)")

                #expect(
                    try await api.request(.GET, "/v1/live-activities/\(UUID())", headers: RelayHTTP.admin).status == 404
                )
                let notObject = try await api.post(
                    "/v1/live-activities", #"{"token":"ab","contentState":[1]}"#, headers: RelayHTTP.admin)
                #expect(notObject.status == 400)
                let other = try await api.post(
                    "/v1/live-activities", #"{"token":"\#(randomToken())","contentState":{"n":0}}"#,
                    headers: RelayHTTP.admin)
                guard case .string(let otherID)? = other["id"] else { Issue.record("no id: \(other.text)"); return }
                let tooBig = try await api.request(.PATCH, "/v1/live-activities/\(otherID)",
                    json: #"{"contentState":{"x":"\#(String(repeating: "a", count: 5000))"}}"#, headers: RelayHTTP.admin
                )
                #expect(tooBig.status == 400)
                #expect(tooBig["error"].map { "\($0)" }?.contains("APNs accepts at most 4096") == true)
            }
        }
    }

    @Test("/metrics counts deliveries and /ready reports its checks")
    func metricsAndReady() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                try await h.registerActivity(session: "m1")
                try await h.sql(#"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 'm1'"#)
                try await h.waitUntil("SELECT count(*) = 1 FROM delivery_log")
                let metrics = try await api.request(.GET, "/metrics")
                #expect(metrics.status == 200)
                #expect(metrics.text.contains(#"liverelay_deliveries_total{status="sent""#))
                #expect(metrics.text.contains(#"liverelay_build_info{version="\#(LiveRelayVersion.current)"} 1"#),
                        "\(metrics.text)")
                #expect(metrics.text.contains("liverelay_commit_to_apns_seconds_bucket"))
                #expect(metrics.text.contains("liverelay_queue_depth 0"))
                #expect(metrics.text.contains("liverelay_queue_oldest_seconds 0"))
                #expect(metrics.text.contains("liverelay_provider_tokens_minted 1"))
                // A push held back for later, a webhook event held back for its retry, and an older one of an
                // endpoint that is paused: all wait, and the gauges say how many and for how long; the paused
                // endpoint's waits by choice, so its age is not what anyone should be alerted to.
                try await h.sql("""
                    INSERT INTO delivery_outbox (kind, event_type, device_token, payload, bundle_id, apns_env,
                                                 enqueued_at, next_attempt_at)
                    VALUES ('alert', 'alert', 'aa11', '{"aps": {}}', 'b', 'sandbox', now() - interval '95 seconds',
                            now() + interval '1 hour')
                    """)
                for (enabled, age) in [(false, 300), (true, 30)] {
                    try await h.sql("""
                        WITH e AS (INSERT INTO webhook_endpoint (url, enabled)
                                   VALUES ('http://127.0.0.1:9/', \(enabled)) RETURNING id)
                        INSERT INTO webhook_outbox (endpoint_id, event_id, event_type, activity_id, body, enqueued_at,
                                                    next_attempt_at)
                        SELECT id, gen_random_uuid(), 'live_activity.updated', gen_random_uuid(), '{}',
                               now() - make_interval(secs => \(Double(age))), now() + interval '1 hour' FROM e
                        """)
                }
                let waiting = try await api.request(.GET, "/metrics").text
                func gauge(_ name: String) -> Double? {
                    waiting.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                        .flatMap { Double($0.split(separator: " ")[1]) }
                }
                #expect(gauge("liverelay_queue_depth") == 1, "\(waiting)")
                #expect(gauge("liverelay_webhook_queue_depth") == 2, "\(waiting)")
                #expect((95..<200).contains(gauge("liverelay_queue_oldest_seconds") ?? 0), "\(waiting)")
                #expect((30..<100).contains(gauge("liverelay_webhook_queue_oldest_seconds") ?? 0), "\(waiting)")
                let ready = try await api.request(.GET, "/ready")
                #expect(ready.status == 200)
                #expect(
                    ready["checks"]
                        == .object([
                            "database": .bool(true), "migrations": .bool(true), "listener": .bool(true),
                            "stream": .bool(true),
                        ]))
            }
        }
    }
}
