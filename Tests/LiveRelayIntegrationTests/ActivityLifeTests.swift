import Foundation
import LiveRelayCore
import Testing

/// README "Activity lifecycle": late tokens, the update budget, push-to-start per type and the age limit, seen at a
/// real HTTP/2 + TLS APNs simulator.
@Suite("Activity life", .timeLimit(.minutes(5)))
struct ActivityLifeTests {
    static func id(_ reply: RelayHTTP.Reply) throws -> String {
        guard case .string(let id)? = reply["id"] else { throw Missing(what: "id in \(reply.text)") }
        return id
    }

    struct Missing: Error { var what: String }

    @Test("updates written before the token arrive at it, the latest state once, the moment it is registered")
    func lateToken() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let created = try await api.post("/v1/live-activities", #"{"contentState":{"n":1}}"#,
                                                 headers: RelayHTTP.admin)
                #expect(created.status == 201 && created["awaitingToken"] == .bool(true), "\(created.text)")
                let id = try Self.id(created)
                for n in 2...3 {
                    let patched = try await api.request(
                        .PATCH, "/v1/live-activities/\(id)", json: #"{"contentState":{"n":\#(n)}}"#,
                        headers: RelayHTTP.admin)
                    #expect(patched.status == 200)
                }
                // Both updates were taken and kept (no token yet): settled as coalesced, waiting for the token.
                try await h.waitUntil("""
                    SELECT count(*) >= 2 FROM delivery_log WHERE activity_id = \(UUID(uuidString: id)!)
                      AND status = 'coalesced' AND error = 'AwaitingToken'
                    """)
                #expect(h.simulator.pushes().isEmpty)
                let token = randomToken()
                let put = try await api.request(.PUT, "/v1/live-activities/\(id)/token",
                                                json: #"{"token":"\#(token)"}"#, headers: RelayHTTP.admin)
                #expect(put.status == 200 && put["awaitingToken"] == .bool(false), "\(put.text)")
                let pushes = try await h.waitForPushes { $0.contains { $0.token == token } }
                #expect(pushes.map(\.n) == [3], "one push of the latest state: \(pushes.map(\.n))")
            }
        }
    }

    @Test("past LIVERELAY_PRIORITY10_PER_HOUR updates go at priority 5 with the reason; alerts and end keep 10")
    func budget() async throws {
        try await Harness.with { h in
            try await h.withRelayPort(environment: ["LIVERELAY_PRIORITY10_PER_HOUR": "2"]) { port in
                let token = try await h.registerActivity(session: "s-budget")
                for n in 1...3 {
                    try await h.sql("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                        WHERE session_id = 's-budget'
                        """)
                    try await h.waitForPushes { $0.contains { $0.token == token && $0.n == Int64(n) } }
                }
                let id = try #require(try await h.rows(
                    "SELECT id FROM activity_registration WHERE session_id = 's-budget'", as: UUID.self).first)
                let api = RelayHTTP(port: port)
                let alert = #"{"contentState":{"n":4},"alert":{"title":"Heads up","body":"now"}}"#
                let alerted = try await api.request(.PATCH, "/v1/live-activities/\(id)", json: alert,
                                                    headers: RelayHTTP.admin)
                #expect(alerted.status == 200)
                try await h.waitForPushes { $0.contains { $0.token == token && $0.n == 4 } }
                try await h.sql("UPDATE activity_registration SET status = 'ended' WHERE session_id = 's-budget'")
                let pushes = try await h.waitForPushes { $0.contains { $0.token == token && $0.event == "end" } }
                #expect(pushes.map { $0.priority ?? "" } == ["10", "10", "5", "10", "10"])
                // The relay logs a push once APNs has answered it, just after the simulator has seen it.
                try await h.waitUntil("""
                    SELECT count(*) = 5 FROM delivery_log WHERE activity_id = \(id) AND status = 'sent'
                    """)
                let reasons = try await h.rows("""
                    SELECT priority || ' ' || priority_reason FROM delivery_log
                    WHERE activity_id = \(id) AND status = 'sent' ORDER BY id
                    """, as: String.self)
                #expect(reasons == ["10 requested", "10 requested", "5 budget", "10 alert", "10 end"])
                let read = try await api.request(.GET, "/v1/live-activities/\(id)", headers: RelayHTTP.admin)
                #expect(read["budgetState"] == .string("downgraded") && read["priority10Limit"] == .integer(2),
                        "\(read.text)")
                let view = try await h.rows(
                    "SELECT budget_state FROM liverelay_activities WHERE id = \(id)", as: String.self)
                #expect(view == ["downgraded"])
            }
        }
    }

    @Test("an activity older than LIVERELAY_ACTIVITY_MAX_AGE is ended with an end push and a stale event")
    func age() async throws {
        try await Harness.with { h in
            try await h.withRelayPort(environment: ["LIVERELAY_ACTIVITY_MAX_AGE": "2s"]) { _ in
                let token = try await h.registerActivity(session: "s-old", state: #"{"n": 7}"#)
                let pushes = try await h.waitForPushes { $0.contains { $0.token == token && $0.event == "end" } }
                #expect(pushes.filter { $0.token == token }.count == 1)
                #expect(pushes.first { $0.token == token }?.n == 7, "the end carries the last state")
                try await h.waitUntil("""
                    SELECT count(*) = 1 FROM broadcast_log WHERE event = 'live_activity.stale'
                      AND data -> 'data' -> 'activity' ->> 'session_id' = 's-old'
                    """)
                #expect(try await h.rows("SELECT status FROM activity_registration WHERE session_id = 's-old'",
                                         as: String.self) == ["ended"])
            }
        }
    }

    @Test("push-to-start uses the token of its attributes type with input-push-token; the activity gets its token")
    func pushToStartPerType() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let old = randomToken(), session = randomToken(), other = randomToken(), update = randomToken()
                let registered = try await api.post("/v1/device/register", #"""
                    {"secret":"s-pts","deviceToken":"\#(randomToken())","pushToStartToken":"\#(old)",
                     "pushToStartTokens":{"SessionActivityAttributes":"\#(session)","DeliveryAttributes":"\#(other)"}}
                    """#)
                #expect(registered.status == 200, "\(registered.text)")
                let started = try await api.post("/v1/event", #"""
                    {"secret":"s-pts","eventType":"start","sessionID":"ses-pts","contentState":{"n":1}}
                    """#)
                #expect(started["sent"] == .integer(1), "\(started.text)")
                let start = try #require(try await h.waitForPushes { !$0.isEmpty }.first)
                #expect(start.token == session && start.event == "start")
                #expect(start.aps["attributes-type"] == .string("SessionActivityAttributes"))
                #expect(start.aps["input-push-token"] == .integer(1))
                // The activity waits for the token the app registers once iOS has started it; progress meanwhile
                // is kept, and sent to that token at once.
                let progress = try await api.post("/v1/event", #"""
                    {"secret":"s-pts","eventType":"progress","sessionID":"ses-pts","contentState":{"n":2}}
                    """#)
                #expect(progress.status == 200)
                #expect(h.simulator.pushes().count == 1, "no second push-to-start while the first activity waits")
                let activity = try await api.post("/v1/activity/register",
                    #"{"secret":"s-pts","sessionID":"ses-pts","activityToken":"\#(update)"}"#)
                #expect(activity.status == 200)
                let pushed = try await h.waitForPushes { $0.contains { $0.token == update } }
                #expect(pushed.last?.n == 2 && pushed.last?.event == "update")
            }
        }
    }
}
