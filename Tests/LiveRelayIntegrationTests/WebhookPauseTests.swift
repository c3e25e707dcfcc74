import Foundation
import LiveRelayCore
import Testing

/// `PATCH /v1/webhooks/{id}`: pausing and resuming an endpoint, and what `GET /v1/webhooks` says about its queue.
@Suite("Pausing webhook endpoints", .timeLimit(.minutes(5)))
struct WebhookPauseTests {
    @Test("a refusing endpoint lists its waiting event and why; paused, it gets nothing; resumed, it is sent at once")
    func pauseAndResume() async throws {
        try await Harness.with { h in
            let receiver = WebhookReceiver()
            receiver.fail(next: 1_000)
            try await receiver.run { url in
                try await h.withRelayPort(environment: WebhookTests.allowPrivate) { port in
                    let api = RelayHTTP(port: port)
                    _ = try await WebhookTests.register(api, url: url)
                    let admin = try await SSEClient(port: port, query: "channel=admin", headers: RelayHTTP.admin)
                    defer { admin.close() }
                    _ = try await h.registerActivity(session: "s-pause")
                    _ = try await receiver.wait { $0.count == 1 }
                    // The admin stream (a dashboard) hears of the refusal as it hears of push outcomes.
                    try await admin.wait { events in
                        events.contains { $0.name == "deliveries" && $0.json?.objectValue?["retrying"] == .integer(1) }
                    }
                    // The refused `started` waits for its retry, and the listing says why.
                    try await h.waitUntil("SELECT count(*) = 1 FROM webhook_outbox WHERE attempts >= 1")
                    let listed = try await api.request(.GET, "/v1/webhooks", headers: RelayHTTP.admin)
                    let endpoint = try #require(listed.json?.arrayValue?.first?.objectValue)
                    let id = try #require(endpoint["id"]?.stringValue)
                    #expect(endpoint["pending"] == .integer(1) && endpoint["oldest_pending_at"] != nil,
                            "\(listed.text)")
                    #expect(endpoint["last_error"]?.stringValue?.contains("503") == true, "\(listed.text)")
                    // The wait its log row names is stale by the time anyone reads it: the listing gives the time.
                    #expect(endpoint["last_error"]?.stringValue?.contains("next attempt") == false, "\(listed.text)")
                    let retry = try #require(endpoint["next_attempt_at"].flatMap(parseTimestamp))
                    let queued = try #require(endpoint["oldest_pending_at"].flatMap(parseTimestamp))
                    #expect(retry > queued, "\(listed.text)")

                    let paused = try await api.request(.PATCH, "/v1/webhooks/\(id)", json: #"{"enabled": false}"#,
                                                       headers: RelayHTTP.admin)
                    #expect(paused.status == 200 && paused["enabled"] == .bool(false), "\(paused.text)")
                    #expect(paused["pending"] == .integer(1) && paused["next_attempt_at"] == nil, "\(paused.text)")
                    // Paused: a new event is not queued for it, and the waiting one is not sent, even when due.
                    try await h.sql(#"UPDATE activity_registration SET content_state = '{"n": 1}'"#)
                    try await h.sql("UPDATE webhook_outbox SET next_attempt_at = now() + interval '1 hour'")
                    try await h.waitForPushes { $0.count == 1 }
                    // (The push's own summary, seen before the count below is taken.)
                    try await admin.wait { events in
                        events.contains { $0.name == "deliveries" && $0.json?.objectValue?["sent"] == .integer(1) }
                    }
                    #expect(try await h.rows("SELECT count(*)::int8 FROM webhook_outbox", as: Int64.self) == [1])

                    // Resumed: its event goes now, not at the hour its backoff had reached.
                    receiver.fail(next: 0)
                    let refusals = receiver.received.count
                    let announced = admin.received.filter { $0.name == "deliveries" }.count
                    let resumed = try await api.request(.PATCH, "/v1/webhooks/\(id)", json: #"{"enabled": true}"#,
                                                        headers: RelayHTTP.admin)
                    #expect(resumed.status == 200 && resumed["enabled"] == .bool(true), "\(resumed.text)")
                    let received = try await receiver.wait(timeout: .seconds(3)) { $0.count == refusals + 1 }
                    #expect(Set(received.compactMap(\.type)) == ["live_activity.started"], "the update was not queued")
                    try await h.waitUntil("SELECT count(*) = 0 FROM webhook_outbox")
                    // A success after refusals is announced too (the dashboard's list shows nothing waiting any more).
                    try await admin.wait { events in
                        events.filter { $0.name == "deliveries" }.dropFirst(announced)
                            .contains { $0.json?.objectValue?["sent"] == .integer(1) }
                    }
                    let emptied = try await api.request(.GET, "/v1/webhooks", headers: RelayHTTP.admin)
                    let after = try #require(emptied.json?.arrayValue?.first?.objectValue)
                    #expect(after["pending"] == .integer(0) && after["last_error"] == nil, "\(emptied.text)")
                }
            }
        }
    }

    @Test("PATCH changes the events an endpoint receives; a body that changes nothing, or an unknown id, is refused")
    func refusals() async throws {
        try await Harness.with { h in
            try await h.withRelayPort(environment: WebhookTests.allowPrivate) { port in
                let api = RelayHTTP(port: port)
                _ = try await WebhookTests.register(api, url: "http://127.0.0.1:9/hook")
                let id = try #require(try await api.request(.GET, "/v1/webhooks", headers: RelayHTTP.admin)
                    .json?.arrayValue?.first?.objectValue?["id"]?.stringValue)
                let changed = try await api.request(
                    .PATCH, "/v1/webhooks/\(id)", json: #"{"events": ["live_activity.ended", "live_activity.ended"]}"#,
                    headers: RelayHTTP.admin)
                #expect(changed.status == 200 && changed["events"] == .array([.string("live_activity.ended")]),
                        "\(changed.text)")
                let cases = [(#"{}"#, "give enabled (false pauses the endpoint, true resumes it) or events"),
                             (#"{"enabled": "no"}"#, "enabled must be true or false"),
                             (#"{"events": []}"#, "events must not be empty (leave it out to keep them)")]
                for (body, sentence) in cases {
                    let refused = try await api.request(.PATCH, "/v1/webhooks/\(id)", json: body,
                                                        headers: RelayHTTP.admin)
                    #expect(refused.status == 400 && refused["error"] == .string(sentence), "\(refused.text)")
                }
                let unknown = try await api.request(.PATCH, "/v1/webhooks/\(UUID())", json: #"{"enabled": true}"#,
                                                    headers: RelayHTTP.admin)
                #expect(unknown.status == 404, "\(unknown.text)")
            }
        }
    }
}
