import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// README "WidgetKit push": a write that changes what a device shows reloads its widgets, coalesced per token, seen at
/// a real HTTP/2 + TLS APNs simulator that validates widget pushes as Apple does.
@Suite("WidgetKit push", .timeLimit(.minutes(5)))
struct WidgetTests {
    static func register(_ api: RelayHTTP, device: UUID, widget: String) async throws {
        let body = """
            {"secret":"test-secret","deviceToken":"\(randomToken())","bundleId":"\(Harness.bundleID)",
             "deviceUUID":"\(device.uuidString.lowercased())","widgetPushToken":"\(widget)"}
            """
        let reply = try await api.post("/v1/device/register", body)
        #expect(reply.status == 200, "\(reply.text)")
    }

    static func reloads(_ h: Harness, _ widget: String) -> [RecordedPush] {
        h.simulator.pushes().filter { $0.token == widget }
    }

    @Test("""
        a burst of message writes: one reload at once, one at the window's end after the last change, as Apple \
        specifies
        """)
    func burst() async throws {
        try await Harness.with { h in
            // A window of 3 s: the burst's five writes (one connection) end well inside it even on a machine the
            // whole suite loads (with 2 s and a connection per write, a clean clone's run once saw them outlast it,
            // and a third reload, rightly, for the write after the window).
            try await h.withRelayPort(environment: ["LIVERELAY_WIDGET_MIN_INTERVAL": "3s"]) { port in
                let api = RelayHTTP(port: port)
                let device = UUID(), widget = randomToken()
                try await Self.register(api, device: device, widget: widget)
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'm0')")
                let first = try await h.waitForPushes { $0.contains { $0.token == widget } }
                let reload = try #require(first.first { $0.token == widget })
                #expect(reload.pushType == "widgets")
                #expect(reload.topic == "\(Harness.bundleID).push-type.widgets")
                #expect(reload.payload == .object(["aps": .object(["content-changed": .bool(true)])]))
                try await h.withConnection { connection in
                    for n in 1...5 {
                        let text = "m\(n)"
                        try await connection.query(
                            "UPDATE device_live_activity_message SET message = \(text) WHERE device_uuid = \(device)",
                            logger: h.logger)
                    }
                }
                let started = ContinuousClock.now
                let burstEnded = Date().timeIntervalSince1970
                #expect(burstEnded - reload.receivedAt < 2.5, "the burst did not end inside the window")
                let both = try await h.waitForPushes { $0.filter { $0.token == widget }.count >= 2 }
                let second = try #require(both.last { $0.token == widget })
                #expect(second.receivedAt - reload.receivedAt >= 2.9, "the window holds the later changes back")
                #expect(ContinuousClock.now - started < .seconds(6))
                // Nothing more: the five writes folded into that one reload, and no row is left to send another.
                try await h.waitUntil("SELECT NOT EXISTS (SELECT 1 FROM delivery_outbox)")
                #expect(Self.reloads(h, widget).count == 2)
                #expect(try await h.rows("""
                    SELECT count(*)::int FROM delivery_log WHERE push_type = 'widgets' AND status = 'sent'
                    """, as: Int32.self) == [2])
            }
        }
    }

    @Test("an activity's update and end reload its device's widgets; GET widget answers the device and the admin only")
    func activityAndRoute() async throws {
        try await Harness.with { h in
            try await h.withRelayPort(environment: ["LIVERELAY_WIDGET_MIN_INTERVAL": "0s"]) { port in
                let api = RelayHTTP(port: port)
                let device = UUID(), widget = randomToken()
                try await Self.register(api, device: device, widget: widget)
                try await h.registerActivity(session: "w-1", device: device)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 'w-1'"#)
                try await h.waitForPushes { $0.filter { $0.token == widget }.count >= 1 }
                try await h.sql("UPDATE activity_registration SET status = 'ended' WHERE session_id = 'w-1'")
                try await h.waitForPushes { $0.filter { $0.token == widget }.count >= 2 }
                try await h.registerActivity(session: "w-2", device: device, state: #"{"n": 7}"#)
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'hi')")

                let minted = try await api.post("/v1/devices/\(device)/token", "{}", headers: RelayHTTP.admin)
                guard case .string(let token)? = minted["token"] else { Issue.record("\(minted.text)"); return }
                let own = try await api.request(
                    .GET, "/v1/devices/\(device)/widget", headers: [("Authorization", "Bearer \(token)")])
                #expect(own.status == 200)
                #expect(own.json == .object([
                    "device_uuid": .string(device.uuidString.lowercased()), "message": .string("hi"),
                    "activities": .array([.object([
                        "session_id": .string("w-2"), "status": .string("active"),
                        "content_state": .object(["n": .integer(7)]),
                    ])]),
                ]), "\(own.text)")
                let other = UUID()
                #expect(try await api.request(.GET, "/v1/devices/\(other)/widget",
                                              headers: [("Authorization", "Bearer \(token)")]).status == 403)
                let unknown = try await api.request(.GET, "/v1/devices/\(other)/widget", headers: RelayHTTP.admin)
                #expect(unknown.status == 404 && unknown.text.contains("GET /v1/devices"), "\(unknown.text)")
                #expect(try await api.request(.GET, "/v1/devices/\(device)/widget").status == 401)
                let admin = try await api.request(.GET, "/v1/devices/\(device)/widget", headers: RelayHTTP.admin)
                #expect(admin.status == 200 && admin.json == own.json)
            }
        }
    }

    @Test("a dead widget token is set to NULL and never used again; the device row stays")
    func deadToken() async throws {
        try await Harness.with { h in
            try await h.withRelayPort(environment: ["LIVERELAY_WIDGET_MIN_INTERVAL": "0s"]) { port in
                let api = RelayHTTP(port: port)
                let device = UUID(), widget = randomToken()
                var faults = SimulatorFaults()
                faults.tokenErrors[widget] = "Unregistered"
                h.simulator.setFaults(faults)
                try await Self.register(api, device: device, widget: widget)
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'x')")
                try await h.waitUntil("""
                    SELECT count(*) = 1 AND bool_and(widget_push_token IS NULL) FROM device_registration
                    WHERE device_uuid = \(device)
                    """)
                try await h.sql("UPDATE device_live_activity_message SET message = 'y' WHERE device_uuid = \(device)")
                try await h.waitUntil("SELECT NOT EXISTS (SELECT 1 FROM delivery_outbox)")
                #expect(try await h.rows("""
                    SELECT count(*)::int FROM delivery_log WHERE push_type = 'widgets' OR error LIKE '%Unregistered%'
                    """, as: Int32.self) == [1], "one attempt, none after the token died")
            }
        }
    }
}
