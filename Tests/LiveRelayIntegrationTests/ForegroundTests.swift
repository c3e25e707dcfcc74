import Foundation
import LiveRelayCore
import Testing

/// README "Foreground-aware delivery": while an app holds its stream, its updates go at priority 5 (or not at all),
/// seen at a real HTTP/2 + TLS APNs simulator with real SSE clients.
@Suite("Foreground-aware delivery", .timeLimit(.minutes(5)))
struct ForegroundTests {
    static func update(_ h: Harness, _ session: String, _ n: Int) async throws {
        try await h.sql("""
            UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n)) WHERE session_id = \(session)
            """)
    }

    /// Writes update `n` and returns the priority it reached the simulator at.
    static func priority(_ h: Harness, _ session: String, _ token: String, _ n: Int) async throws -> String? {
        try await update(h, session, n)
        let pushes = try await h.waitForPushes { $0.contains { $0.token == token && $0.n == Int64(n) } }
        return pushes.last { $0.token == token && $0.n == Int64(n) }?.priority
    }

    static func deviceToken(_ api: RelayHTTP, _ device: UUID) async throws -> [(String, String)] {
        let minted = try await api.post("/v1/devices/\(device)/token", "{}", headers: RelayHTTP.admin)
        guard case .string(let token)? = minted["token"] else { throw Missing(what: "token in \(minted.text)") }
        return [("Authorization", "Bearer \(token)")]
    }

    struct Missing: Error { var what: String }

    /// An app's stream on a raw connection, closed for certain by `close()`. `keptAlive`: the stream follows another
    /// request on the same connection (served by the connection's task, not detached).
    static func appStream(port: Int, query: String, header: String, keptAlive: Bool = false) async throws
        -> RawConnection {
        let connection = try RawConnection(port: port)
        if keptAlive {
            try connection.get("/health")
            #expect(try await connection.read { $0.contains("\"ok\"") })
        }
        try connection.get("/v1/stream?\(query)", headers: [header])
        #expect(try await connection.read { $0.contains(": connected") }, "\(connection.text)")
        return connection
    }

    @Test("""
        a device's or a session's own stream makes updates go at 5 (reason foreground); closed, 10 again; admin \
        streams never count; end keeps 10
        """)
    func downgrade() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let device = UUID(), uuid = device.uuidString.lowercased()
                let token = try await h.registerActivity(session: "fg-1", device: device)
                let admin = try await SSEClient(port: port, query: "channel=device:\(uuid)", headers: RelayHTTP.admin)
                #expect(admin.status == 200)
                #expect(try await Self.priority(h, "fg-1", token, 1) == "10", "an admin's stream is a dashboard")

                let bearer = try await Self.deviceToken(api, device)[0]
                let own = try await Self.appStream(
                    port: port, query: "channel=device:\(uuid)", header: "\(bearer.0): \(bearer.1)", keptAlive: true)
                #expect(try await Self.priority(h, "fg-1", token, 2) == "5")
                let listed = try await api.request(.GET, "/v1/live-activities", headers: RelayHTTP.admin)
                #expect(listed.text.contains(#""foreground":true"#), "\(listed.text)")
                // The push reaches APNs before its batch records it: the second send's log row, once written.
                try await h.waitUntil(
                    "SELECT count(*) >= 2 FROM delivery_log WHERE session_id = 'fg-1' AND status = 'sent'")
                #expect(try await h.rows("""
                    SELECT priority_reason FROM delivery_log WHERE session_id = 'fg-1' AND status = 'sent'
                    ORDER BY id DESC LIMIT 1
                    """, as: String.self) == ["foreground"])
                #expect(try await h.rows(
                    "SELECT foreground FROM liverelay_activities WHERE session_id = 'fg-1'", as: Bool.self) == [true])
                // An app reads what it is sent, so when it closes nothing is left unread and its socket ends with
                // FIN (unread bytes would make it a reset, which every server notices).
                #expect(try await own.read { $0.contains("event: activity-update") }, "\(own.text)")
                own.close()
                // Closed on a live relay: at once (the connection's end reaches the relay, which removes its row),
                // though this stream followed another request on its connection.
                // (A heartbeat's failed write would notice it too, but only 10-30 s later.)
                try await h.waitUntil(
                    timeout: .seconds(5), "SELECT NOT foreground FROM liverelay_activities WHERE session_id = 'fg-1'")
                #expect(try await Self.priority(h, "fg-1", token, 3) == "10")

                // The pairing secret following the session counts too; `end` is never lowered.
                let paired = try await SSEClient(
                    port: port, query: "channel=session:fg-1", headers: [("X-Relay-Secret", "test-secret")])
                #expect(paired.status == 200)
                #expect(try await Self.priority(h, "fg-1", token, 4) == "5")
                try await h.sql("UPDATE activity_registration SET status = 'ended' WHERE session_id = 'fg-1'")
                let end = try await h.waitForPushes { $0.contains { $0.token == token && $0.event == "end" } }
                #expect(end.last { $0.token == token && $0.event == "end" }?.priority == "10")
                paired.close()
                admin.close()
            }
        }
    }

    @Test("skip: no update push while foreground (logged skipped, Foreground); leaving pushes the latest state once")
    func skip() async throws {
        try await Harness.with { h in
            try await h.withRelayPort(environment: ["LIVERELAY_FOREGROUND_PUSH": "skip"]) { port in
                let api = RelayHTTP(port: port)
                let device = UUID(), uuid = device.uuidString.lowercased()
                let token = try await h.registerActivity(session: "fg-skip", device: device)
                let bearer = try await Self.deviceToken(api, device)[0]
                let own = try await Self.appStream(
                    port: port, query: "channel=device:\(uuid)", header: "\(bearer.0): \(bearer.1)")
                for n in 1...3 { try await Self.update(h, "fg-skip", n) }
                // The app got every change on its stream; the Lock Screen got nothing.
                #expect(try await own.read { $0.components(separatedBy: "event: activity-update").count == 4 })
                try await h.waitUntil("""
                    SELECT count(*) >= 1 FROM delivery_log
                    WHERE session_id = 'fg-skip' AND status = 'skipped' AND error = 'Foreground'
                    """)
                try await h.waitUntil("SELECT NOT EXISTS (SELECT 1 FROM delivery_outbox)")
                #expect(!h.simulator.pushes().contains { $0.token == token })
                let metrics = try await api.request(.GET, "/metrics", headers: RelayHTTP.admin)
                #expect(metrics.text.contains(#"liverelay_pushes_avoided_total{reason="Foreground"}"#))

                own.close()
                let caught = try await h.waitForPushes { $0.contains { $0.token == token } }
                #expect(caught.filter { $0.token == token }.map(\.n) == [3], "the latest state, once")
                #expect(caught.last { $0.token == token }?.priority == "10")
            }
        }
    }

    @Test("""
        presence is shared: a stream on one relay lowers the other's pushes; SIGKILLed, it stops counting within \
        30 s
        """)
    func twoRelays() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { _ in
                let (holder, holderPort) = try await RelayProcess.serve(h)
                let device = UUID(), uuid = device.uuidString.lowercased()
                let token = try await h.registerActivity(session: "fg-two", device: device)
                let api = RelayHTTP(port: holderPort)
                let stream = try await SSEClient(
                    port: holderPort, query: "channel=device:\(uuid)", headers: try await Self.deviceToken(api, device))
                #expect(stream.status == 200)
                #expect(try await Self.priority(h, "fg-two", token, 1) == "5")
                holder.stop(signal: SIGKILL)  // (returns once the process is gone)
                // Only this relay sends now, and the dead relay's stream still counts for the window (it beat at
                // most 5 s ago): this push is lowered by presence another process wrote.
                #expect(try await Self.priority(h, "fg-two", token, 2) == "5")
                let killed = ContinuousClock.now
                var n = 2
                var priority: String?
                repeat {
                    try await Task.sleep(for: .seconds(1))
                    n += 1
                    priority = try await Self.priority(h, "fg-two", token, n)
                } while priority != "10" && ContinuousClock.now - killed < .seconds(40)
                #expect(priority == "10")
                #expect(ContinuousClock.now - killed < .seconds(31), "back to 10 after \(ContinuousClock.now - killed)")
                stream.close()
            }
        }
    }
}
