import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// The OpenCode relay routes with the exact bodies the OpenCode server and app send.
@Suite("Relay API (OpenCode)")
struct RelayAPITests {
    @Test("register a device, then an event sends an alert push and answers with the real outcome")
    func alertEvent() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let token = randomToken()
                let register = try await api.post("/v1/device/register", #"""
                    {"secret":"pair-secret","deviceToken":"\#(token)","bundleId":"\#(Harness.bundleID)",
                     "apnsEnv":"sandbox","appVersion":"1.4.2"}
                    """#)
                // A key the relay does not take (a client's own) passes; only a field's misspelling is refused.
                #expect(register.status == 200, "\(register.text)")
                #expect(register.text == #"{"ok":true}"#)
                let event = try await api.post("/v1/event", #"""
                    {"secret":"pair-secret","serverID":"srv1","eventType":"complete","sessionID":"ses_1",
                     "title":"Fix auth bug","body":"Done"}
                    """#)
                #expect(event.status == 200)
                #expect(event["ok"] == .bool(true) && event["sent"] == .integer(1) && event["failed"] == .integer(0))
                let push = try #require(h.simulator.pushes().first)
                #expect(push.pushType == "alert" && push.topic == Harness.bundleID && push.priority == "10")
                #expect(push.environment == "sandbox" && push.token == token)
                #expect(push.aps["alert"] == .object(["title": .string("Fix auth bug"), "body": .string("Done")]))
                #expect(push.payload.objectValue?["eventType"] == .string("complete"))
                #expect(push.payload.objectValue?["sessionID"] == .string("ses_1"))
                #expect(push.aps["sound"] == .string("alert.wav"), "the OpenCode app ships alert.wav")
                // A secret with no devices: nothing to send.
                let none = try await api.post(
                    "/v1/event", #"{"secret":"other","eventType":"permission","sessionID":"ses_1"}"#)
                #expect(none["sent"] == .integer(0) && none["failed"] == .integer(0))
            }
        }
    }

    @Test("activity register, progress updates it, complete ends it; registering again reactivates")
    func activityLifecycle() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let token = randomToken()
                #expect(try await api.post("/v1/activity/register", #"""
                    {"secret":"s3cret","sessionID":"ses_a","activityToken":"\#(token)",
                     "bundleId":"\#(Harness.bundleID)"}
                    """#).status == 200)
                let progress = try await api.post("/v1/event", #"""
                    {"secret":"s3cret","eventType":"progress","sessionID":"ses_a",
                     "contentState":{"status":"working","sessionTitle":"Fix","lastMessage":"Installing dependencies...",
                                     "retryInfo":null}}
                    """#)
                #expect(progress["sent"] == .integer(1))
                let update = try #require(h.simulator.pushes().first)
                #expect(update.event == "update" && update.token == token)
                #expect(update.contentState["lastMessage"] == .string("Installing dependencies..."))
                let complete = try await api.post(
                    "/v1/event", #"{"secret":"s3cret","eventType":"complete","sessionID":"ses_a"}"#)
                #expect(complete["ok"] == .bool(true))
                try await h.waitForPushes { $0.contains { $0.event == "end" } }
                try await h.waitUntil("SELECT status = 'ended' FROM activity_registration WHERE session_id = 'ses_a'")
                // Registering the same (secret, sessionID) again replaces the token and reactivates.
                let newToken = randomToken()
                _ = try await api.post(
                    "/v1/activity/register", #"{"secret":"s3cret","sessionID":"ses_a","activityToken":"\#(newToken)"}"#)
                let rows = try await h.rows(
                    "SELECT status || ' ' || activity_token FROM activity_registration WHERE session_id = 'ses_a'",
                    as: String.self)
                #expect(rows == ["active \(newToken)"])
                #expect(
                    try await api.post("/v1/activity/unregister", #"{"secret":"s3cret","sessionID":"ses_a"}"#).status
                        == 200)
                #expect(try await h.rows("SELECT count(*)::int8 FROM activity_registration", as: Int64.self) == [0])
            }
        }
    }

    @Test("start with no registered activity sends a push-to-start to the device's push-to-start token")
    func pushToStart() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let startToken = randomToken()
                _ = try await api.post("/v1/device/register",
                    #"{"secret":"p2s","deviceToken":"\#(randomToken())","pushToStartToken":"\#(startToken)"}"#)
                let reply = try await api.post(
                    "/v1/event", #"{"secret":"p2s","eventType":"start","sessionID":"ses_s","title":"Fix auth bug"}"#)
                #expect(reply["sent"] == .integer(1))
                let push = try #require(h.simulator.pushes().first)
                #expect(push.token == startToken && push.pushType == "liveactivity" && push.event == "start")
                #expect(push.aps["attributes-type"] == .string("SessionActivityAttributes"))
                #expect(push.aps["attributes"] == .object(["sessionId": .string("ses_s")]))
                #expect(push.aps["alert"]?.objectValue?["title"] == .string("Fix auth bug"))
            }
        }
    }

    @Test("/health answers ok with the original relay's device and delivery counts")
    func healthCounts() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                // The counts come with /health while the database answers within a second; a relay that has just
                // started on a loaded machine may still be opening its first connection.
                func health() async throws -> RelayHTTP.Reply {
                    let deadline = ContinuousClock.now + .seconds(15)
                    var reply = try await api.request(.GET, "/health")
                    while reply["devices"] == nil, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(100))
                        reply = try await api.request(.GET, "/health")
                    }
                    return reply
                }
                let empty = try await health()
                #expect(empty.status == 200 && empty["ok"] == .bool(true))
                #expect(empty["version"] == .string(LiveRelayVersion.current), "\(empty.text)")
                #expect(empty["devices"] == .integer(0) && empty["deliveries"] == .integer(0), "\(empty.text)")
                for _ in 0..<2 {
                    let device = #"{"secret":"health","deviceToken":"\#(randomToken())"}"#
                    _ = try await api.post("/v1/device/register", device)
                }
                let event = try await api.post(
                    "/v1/event", #"{"secret":"health","eventType":"permission","sessionID":"s"}"#)
                #expect(event["sent"] == .integer(2))
                let counted = try await health()
                #expect(counted["devices"] == .integer(2) && counted["deliveries"] == .integer(2), "\(counted.text)")
            }
        }
    }
}
