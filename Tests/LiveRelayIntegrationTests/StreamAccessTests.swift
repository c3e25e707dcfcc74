import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// Who may read which stream channels: the credentials, the refusals, and the admin's `*`.
@Suite("SSE stream access")
struct StreamAccessTests {
    @Test("401 without credentials, 403 for channels the caller may not read; device tokens and secrets read their own")
    func authorization() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let device = UUID()
                let other = UUID()
                let none = try await api.request(.GET, "/v1/stream?channel=device:\(device)")
                #expect(none.status == 401 && none["ok"] == .bool(false))
                let wrongAdmin = try await api.request(
                    .GET, "/v1/stream?channel=device:\(device)", headers: [("Authorization", "Bearer nope")])
                #expect(wrongAdmin.status == 401)
                #expect(try await api.post("/v1/devices/\(device)/token", "{}").status == 401)

                let minted = try await api.post("/v1/devices/\(device)/token", "{}", headers: RelayHTTP.admin)
                guard case .string(let token)? = minted["token"] else {
                    Issue.record("no token: \(minted.text)"); return
                }
                // A device's token is not the admin's: it cannot follow every channel.
                let bearer = [("Authorization", "Bearer \(token)")]
                let every = try await api.request(.GET, "/v1/stream?channel=*", headers: bearer)
                #expect(every.status == 403)
                let forbidden = try await api.request(
                    .GET, "/v1/stream?channel=device:\(other)", headers: [("Authorization", "Bearer \(token)")])
                #expect(forbidden.status == 403 && forbidden["ok"] == .bool(false))
                #expect(
                    try await api.post(
                        "/v1/devices/\(other)/token", "{}", headers: [("Authorization", "Bearer \(token)")]
                    ).status == 403)

                let own = try await SSEClient(
                    port: port, query: "channel=device:\(device.uuidString.lowercased())",
                    headers: [("Authorization", "Bearer \(token)")])
                #expect(own.status == 200)
                // Browsers pass the token as access_token.
                let browser = try await SSEClient(
                    port: port, query: "channel=device:\(device.uuidString.lowercased())&access_token=\(token)",
                    headers: [])
                #expect(browser.status == 200)
                try await h.sql("""
                    INSERT INTO device_live_activity_message (device_uuid, message)
                    VALUES (\(device), 'mine'), (\(other), 'theirs')
                    """)
                // A later write of the device's own marks the end: whatever the other device's write sent is before it.
                try await h.sql(
                    "UPDATE device_live_activity_message SET message = 'last' WHERE device_uuid = \(device)")
                for stream in [own, browser] {
                    let events = try await stream.wait { $0.last?.json?.objectValue?["message"] == .string("last") }
                    #expect(events.map { $0.json?.objectValue?["message"] } == [.string("mine"), .string("last")])
                }

                // A pairing secret reads the sessions registered under it, and no others.
                _ = try await api.post(
                    "/v1/activity/register",
                    #"{"secret":"mine","sessionID":"ses_mine","activityToken":"\#(randomToken())"}"#)
                _ = try await api.post(
                    "/v1/activity/register",
                    #"{"secret":"theirs","sessionID":"ses_theirs","activityToken":"\#(randomToken())"}"#)
                let allowed = try await SSEClient(
                    port: port, query: "channel=session:ses_mine", headers: [("X-Relay-Secret", "mine")])
                #expect(allowed.status == 200)
                let denied = try await api.request(
                    .GET, "/v1/stream?channel=session:ses_theirs", headers: [("X-Relay-Secret", "mine")])
                #expect(denied.status == 403)
                // A channel that names nothing is refused with the rule it breaks, quoting what was sent.
                let forms = "device:<uuid>, session:<id>, channel:<name>, admin or *"
                let refusals = [
                    ("everything", #"channel "everything" must be "# + forms),
                    ("", #"channel "" must be "# + forms),
                    ("device:42", #"channel "device:42" does not name a device: device: takes a UUID (device:<uuid>)"#),
                    ("session:", #"channel "session:" does not name a session: a session id is 1-255 characters"#),
                    ("channel:a%20b!", #"channel "channel:a%20b!" does not name a broadcast channel: "#
                        + "a name is 1-64 of A-Z, a-z, 0-9 and _.~%-"),
                ]
                for (channel, sentence) in refusals {
                    let query = channel.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? channel
                    let refused = try await api.request(.GET, "/v1/stream?channel=\(query)", headers: RelayHTTP.admin)
                    #expect(refused.status == 400 && refused["error"] == .string(sentence),
                            "\(channel): \(refused.text)")
                }
                [own, browser, allowed].forEach { $0.close() }
            }
        }
    }

    @Test("the admin follows every channel with * (and batch summaries on admin); nobody else may")
    func everyChannel() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let device = UUID()
                try await h.registerActivity(session: "ses_all", device: device)
                let all = try await SSEClient(port: port, query: "channel=*", headers: RelayHTTP.admin)
                #expect(all.status == 200)
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'hi')")
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 'ses_all'"#)
                let events = try await all.wait { events in
                    Set(events.map(\.name)).isSuperset(of: ["live-activity-message", "activity-update", "deliveries"])
                }
                let summary = try #require(events.first { $0.name == "deliveries" })
                #expect(summary.json?.objectValue?["sent"] != nil)
                all.close()
                let minted = try await api.post("/v1/devices/\(device)/token", "{}", headers: RelayHTTP.admin)
                guard case .string(let token)? = minted["token"] else { Issue.record("no token"); return }
                for channel in ["*", "admin"] {
                    let query = "/v1/stream?channel=\(channel == "*" ? "%2A" : channel)"
                    #expect(try await api.request(.GET, query, headers: [("Authorization", "Bearer \(token)")])
                        .status == 403, "\(channel)")
                    #expect(try await api.request(.GET, query, headers: [("X-Relay-Secret", "test-secret")])
                        .status == 403, "\(channel)")
                }
            }
        }
    }
}
