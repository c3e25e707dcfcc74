import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// The foreground stream: every change as a Server-Sent Event, resumable, and only for those allowed to read it.
@Suite("SSE stream")
struct StreamTests {
    @Test("a SQL write shows as an event with id, name and JSON data; Last-Event-ID resumes without loss or repeat")
    func eventsAndResume() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let device = UUID()
                try await h.registerActivity(session: "ses_sse", device: device)
                let query = "channel=session:ses_sse&channel=device:\(device.uuidString.lowercased())"
                let stream = try await SSEClient(port: port, query: query, headers: RelayHTTP.admin)
                #expect(stream.status == 200)
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 'ses_sse'"#)
                let first = try await stream.wait { $0.count == 1 }[0]
                #expect(first.name == "activity-update")
                #expect(first.json == .object([
                    "session_id": .string("ses_sse"), "device_uuid": .string(device.uuidString.lowercased()),
                    "status": .string("active"), "content_state": .object(["n": .integer(1)]),
                ]))
                let firstID = try #require(first.id)
                stream.close()

                // Written while nobody listens; a client resuming from the first id gets exactly these, in order.
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'hello')")
                try await h.sql(
                    #"UPDATE activity_registration SET content_state = '{"n": 2}' WHERE session_id = 'ses_sse'"#)
                try await h.sql("UPDATE activity_registration SET status = 'ended' WHERE session_id = 'ses_sse'")
                try await h.waitForPushes { $0.contains { $0.event == "end" } }
                let resumed = try await SSEClient(
                    port: port, query: query, headers: RelayHTTP.admin + [("Last-Event-ID", "\(firstID)")])
                let events = try await resumed.wait { $0.count >= 3 }
                #expect(events.map(\.name) == ["live-activity-message", "activity-update", "activity-end"])
                #expect(events[0].json?.objectValue?["message"] == .string("hello"))
                let ids = events.compactMap(\.id)
                #expect(ids.count == 3 && ids == ids.sorted() && ids[0] > firstID)
                // Live events keep coming after the backlog, once each.
                try await h.sql("UPDATE device_live_activity_message SET message = 'bye' WHERE device_uuid = \(device)")
                let more = try await resumed.wait { $0.count >= 4 }
                #expect(more.count == 4 && more[3].json?.objectValue?["message"] == .string("bye"))
                resumed.close()
            }
        }
    }

    @Test("with nobody listening the hub reads the log lazily; a new client still gets only what follows it")
    func newClientAfterQuietPeriod() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let device = UUID()
                let query = "channel=device:\(device.uuidString.lowercased())"
                // Written while nobody listens, just before the client connects (the hub has not read it yet).
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'old')")
                let stream = try await SSEClient(port: port, query: query, headers: RelayHTTP.admin)
                #expect(stream.status == 200)
                try await h.sql("UPDATE device_live_activity_message SET message = 'new' WHERE device_uuid = \(device)")
                let events = try await stream.wait { $0.count >= 1 }
                #expect(events.map { $0.json?.objectValue?["message"] } == [.string("new")], "sent what came before it")
                stream.close()
            }
        }
    }

    @Test("two relays on one database: a write shows on both instances' streams exactly once each")
    func twoInstances() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { first in
                try await h.withRelayPort { second in
                    let device = UUID()
                    let query = "channel=device:\(device.uuidString.lowercased())"
                    let a = try await SSEClient(port: first, query: query, headers: RelayHTTP.admin)
                    let b = try await SSEClient(port: second, query: query, headers: RelayHTTP.admin)
                    try await h.withConnection { connection in
                        for n in 1...20 {
                            try await connection.query("""
                                INSERT INTO device_live_activity_message (device_uuid, message)
                                VALUES (\(device), \(String(n)))
                                ON CONFLICT (device_uuid) DO UPDATE SET message = excluded.message
                                """, logger: h.logger)
                        }
                    }
                    // A last write as a sentinel: once it has arrived, everything before it has too, so a duplicate
                    // would be visible without waiting for one.
                    try await h.sql(
                        "UPDATE device_live_activity_message SET message = 'end' WHERE device_uuid = \(device)")
                    for stream in [a, b] {
                        let events = try await stream.wait { $0.last?.json?.objectValue?["message"] == .string("end") }
                        #expect(
                            events.compactMap { $0.json?.objectValue?["message"] } == (1...20).map {
                                .string(String($0))
                            } + [.string("end")])
                    }
                    a.close()
                    b.close()
                }
            }
        }
    }

    @Test("the device message REST endpoint: admin upserts, the triggers push, a device token reads only its row")
    func deviceMessageREST() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let device = UUID()
                let token = try await h.registerActivity(
                    session: "ses_rest", device: device, state: #"{"mode": "vpn"}"#)
                let body = #"{"device_uuid":"\#(device.uuidString.lowercased())","#
                    + #""message":"Meeting at 4","updated_by":"dashboard"}"#
                let unauthorized = try await api.post("/rest/v1/device_live_activity_message", body)
                #expect(unauthorized.status == 401)
                let written = try await api.post("/rest/v1/device_live_activity_message", body,
                                                 headers: RelayHTTP.admin + [("Prefer", "resolution=merge-duplicates")])
                #expect(written.status == 201)
                let push = try #require(try await h.waitForPushes { !$0.isEmpty }.first)
                #expect(push.token == token && push.contentState["note"] == .string("Meeting at 4"))
                let again = try await api.post(
                    "/rest/v1/device_live_activity_message", body.replacingOccurrences(of: "at 4", with: "at 5"),
                                               headers: RelayHTTP.admin + [("Prefer", "resolution=merge-duplicates")])
                #expect(again.status == 201)
                // The database's refusals reach the caller: a duplicate without merge is 409, a push too large 400.
                let duplicate = try await api.post(
                    "/rest/v1/device_live_activity_message", body, headers: RelayHTTP.admin)
                #expect(duplicate.status == 409 && duplicate["ok"] == .bool(false))
                #expect(duplicate["error"] == .string("device \(device.uuidString.lowercased()) has a message already: "
                                                      + "send Prefer: resolution=merge-duplicates to replace it"),
                        "\(duplicate.text)")
                // One device twice in one request is refused whole, with or without merge (which row wins would be
                // a guess): before, the upsert's own refusal of a row changed twice was a 500.
                let twice = "[\(body),\(body.replacingOccurrences(of: "at 4", with: "at 6"))]"
                for headers in [RelayHTTP.admin, RelayHTTP.admin + [("Prefer", "resolution=merge-duplicates")]] {
                    let refused = try await api.post("/rest/v1/device_live_activity_message", twice, headers: headers)
                    #expect(refused.status == 400 && refused["error"] == .string(
                        "device_uuid \(device.uuidString.lowercased()) is given twice (rows 1 and 2): a device has one "
                            + "message, so send it once"), "\(refused.status) \(refused.text)")
                }
                let messageBody = { (message: String) in
                    #"{"device_uuid":"\#(device.uuidString.lowercased())","message":"\#(message)"}"#
                }
                let tooLarge = try await api.post(
                    "/rest/v1/device_live_activity_message", messageBody(String(repeating: "x", count: 4090)),
                    headers: RelayHTTP.admin + [("Prefer", "resolution=merge-duplicates")])
                #expect(tooLarge.status == 400)
                #expect(tooLarge["error"].map { "\($0)" }?.contains("APNs accepts at most 4096") == true)
                // Past 4,096 characters the relay refuses a message before any database work, saying so; characters
                // are counted, not bytes: 4,096 two-byte ones pass that check and meet the database's push size.
                let tooLong = try await api.post("/rest/v1/device_live_activity_message",
                    messageBody(String(repeating: "x", count: 4097)), headers: RelayHTTP.admin)
                #expect(tooLong.status == 400 && tooLong["error"] == .string("message is longer than 4096 characters"),
                        "\(tooLong.text)")
                let longest = try await api.post("/rest/v1/device_live_activity_message",
                    messageBody(String(repeating: "é", count: 4096)),
                    headers: RelayHTTP.admin + [("Prefer", "resolution=merge-duplicates")])
                #expect(longest.status == 400
                        && longest["error"].map { "\($0)" }?.contains("APNs accepts at most 4096") == true,
                        "\(longest.status) \(longest.text)")

                let minted = try await api.post("/v1/devices/\(device)/token", "{}", headers: RelayHTTP.admin)
                guard case .string(let deviceToken)? = minted["token"] else { Issue.record("no token"); return }
                let read = try await api.request(
                    .GET, "/rest/v1/device_live_activity_message?device_uuid=eq.\(device.uuidString.lowercased())",
                                                 headers: [("Authorization", "Bearer \(deviceToken)")])
                #expect(read.status == 200)
                #expect(read.json?.arrayValue?.first?.objectValue?["message"] == .string("Meeting at 5"))
                let other = try await api.request(
                    .GET, "/rest/v1/device_live_activity_message?device_uuid=eq.\(UUID().uuidString)",
                                                  headers: [("Authorization", "Bearer \(deviceToken)")])
                #expect(other.status == 403)
                let deviceWrite = try await api.post(
                    "/rest/v1/device_live_activity_message", body, headers: [("Authorization", "Bearer \(deviceToken)")]
                )
                #expect(deviceWrite.status == 403)
            }
        }
    }

    /// A stream that opens its connection and one that follows other requests on it get the same events; a refused
    /// stream is answered and its connection closed; a client that leaves ends its subscription at once.
    @Test("streams on new and kept-alive connections alike; refusals close; leaving ends the subscription")
    func connections() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let device = UUID()
                try await h.registerActivity(session: "ses_conn", device: device)
                let admin = "Authorization: Bearer \(Harness.adminToken)"
                let path = "/v1/stream?channel=session:ses_conn"
                // Answered without a task of its own (the connection's first request).
                let first = try RawConnection(port: port)
                try first.get(path, headers: [admin])
                // Answered by Hummingbird's handling of a kept-alive connection.
                let following = try RawConnection(port: port)
                try following.get("/health")
                #expect(try await following.read { $0.contains("\"ok\":true") })
                try following.get(path, headers: [admin])
                // A device's uuid in capitals names the same channel as the log's lower-case one.
                let capitals = try RawConnection(port: port)
                try capitals.get("/v1/stream?channel=device:\(device.uuidString.uppercased())", headers: [admin])
                for stream in [first, following, capitals] {
                    #expect(try await stream.read { $0.contains(": connected") }, "not connected: \(stream.text)")
                }
                try await h.sql(#"""
                    UPDATE activity_registration SET content_state = '{"n": 7}' WHERE session_id = 'ses_conn'
                    """#)
                for stream in [first, following, capitals] {
                    #expect(try await stream.read { $0.contains(#""n": 7"#) }, "no event: \(stream.text)")
                    #expect(stream.text.contains("Content-Type: text/event-stream"))
                }

                // A first request that does not parse is answered as on any connection: 400, closed.
                let garbled = try RawConnection(port: port)
                try garbled.send("NOT HTTP AT ALL\r\n\r\n")
                #expect(try await garbled.readUntilClosed(), "a garbled request's connection stays open")
                #expect(garbled.text.hasPrefix("HTTP/1.1 400"), "\(garbled.text)")

                let refused = try RawConnection(port: port)
                try refused.get(path)
                #expect(try await refused.readUntilClosed(), "a refused stream's connection stays open")
                #expect(refused.text.hasPrefix("HTTP/1.1 401"), "\(refused.text)")
                #expect(refused.text.contains("authentication required"))

                let api = RelayHTTP(port: port)
                func subscribers() async throws -> Double? {
                    let metrics = try await api.request(.GET, "/metrics", headers: RelayHTTP.admin).text
                    return metrics.split(separator: "\n").first { $0.hasPrefix("liverelay_sse_subscribers ") }
                        .flatMap { Double($0.split(separator: " ")[1]) }
                }
                /// The count once it reaches `expected`, or what it is after 5 s.
                func subscribers(reaching expected: Double) async throws -> Double? {
                    let deadline = ContinuousClock.now + .seconds(5)
                    while try await subscribers() != expected, ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    return try await subscribers()
                }
                #expect(try await subscribers() == 3)
                // A connection's close ends its subscription at once, also for a stream that followed another
                // request and whose client read everything (its close is a FIN, which leaves the connection
                // half-open, not a reset): not at a failed heartbeat 15-30 s later.
                capitals.close()
                #expect(try await subscribers(reaching: 2) == 2)
                first.close()
                #expect(try await subscribers(reaching: 1) == 1)
                following.close()
                #expect(try await subscribers(reaching: 0) == 0)
            }
        }
    }
}

extension JSONValue {
    var arrayValue: [JSONValue]? { if case .array(let values) = self { return values } else { return nil } }
}
