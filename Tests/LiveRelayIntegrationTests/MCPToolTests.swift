import APNsSimulator
import Foundation
import LiveRelayCore
import LiveRelayMCP
import LiveRelayPostgres
import LiveRelayStore
import MCP
import PostgresNIO
import Testing

/// The MCP tools through the SDK's own client over its in-memory transport (what an agent sees), against a running
/// relay that delivers what they write; and POST /mcp's authorisation.
@Suite("MCP tools")
struct MCPToolTests {
    /// A connected MCP client for the tools over the harness's database.
    func withClient(_ h: Harness, _ body: @Sendable (Client) async throws -> Void) async throws {
        let connector = try DatabaseConnector(url: h.databaseURL)
        let pool = PostgresClient(configuration: connector.clientConfiguration, backgroundLogger: h.logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            let server = await RelayTools(store: RelayStore(client: pool, logger: h.logger), logger: h.logger)
                .makeServer()
            let (clientSide, serverSide) = await InMemoryTransport.createConnectedPair()
            try await server.start(transport: serverSide)
            let client = Client(name: "tests", version: "1")
            let initialized = try await client.connect(transport: clientSide)
            #expect(initialized.serverInfo.version == LiveRelayVersion.current)
            try await body(client)
            await client.disconnect()
            await server.stop()
            group.cancelAll()
        }
    }

    static func text(_ content: [Tool.Content]) -> String {
        content.compactMap { if case .text(let text, _, _) = $0 { text } else { nil } }.joined(separator: "\n")
    }

    @Test("nine tools with schemas; the read tools say they only read")
    func listed() async throws {
        try await Harness.with { h in
            try await withClient(h) { client in
                let tools = try await client.listTools().tools
                #expect(Set(tools.map(\.name)) == [
                    "set_live_activity_message", "get_live_activity_message", "list_devices", "list_live_activities",
                    "update_live_activity", "end_live_activity", "recent_deliveries", "list_channels", "update_channel",
                ])
                for tool in tools {
                    let reads = ["get_live_activity_message", "list_devices", "list_live_activities",
                                 "recent_deliveries", "list_channels"].contains(tool.name)
                    #expect((tool.annotations.readOnlyHint == true) == reads, "\(tool.name)")
                    #expect(tool.description?.contains("Example") == true, "\(tool.name)")
                    #expect(tool.inputSchema.objectValue?["additionalProperties"] == .bool(false), "\(tool.name)")
                }
                // The status filters offer exactly the statuses the tables have.
                func statuses(_ name: String) -> Value? {
                    tools.first { $0.name == name }?.inputSchema.objectValue?["properties"]?.objectValue?["status"]?
                        .objectValue?["enum"]
                }
                #expect(statuses("list_live_activities") == ["active", "ended", "invalidated"])
                #expect(statuses("recent_deliveries") == ["sent", "failed", "coalesced", "retrying", "skipped"])
                #expect(statuses("list_channels") == ["active", "ended", "deleted", "failed"])
            }
        }
    }

    @Test("POST /mcp answers 503 when the server gives no answer within the limit, rather than never")
    func answerLimit() async throws {
        try await Harness.with { h in
            let device = UUID()
            try await h.sql("""
                INSERT INTO device_live_activity_message (device_uuid, message, updated_by)
                VALUES (\(device), 'before', 'test')
                """)
            let connector = try DatabaseConnector(url: h.databaseURL)
            let pool = PostgresClient(configuration: connector.clientConfiguration, backgroundLogger: h.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await pool.run() }
                let endpoint = MCPHTTPEndpoint(
                    tools: RelayTools(store: RelayStore(client: pool, logger: h.logger), logger: h.logger),
                    answerLimit: .seconds(1))
                // Another transaction holds the device's message row: the tool's write waits on its lock (up to
                // the store's 10 s lock_timeout), so the server has no answer when the limit comes.
                try await h.withConnection { holder in
                    try await holder.query("BEGIN", logger: h.logger)
                    try await holder.query(
                        "SELECT 1 FROM device_live_activity_message WHERE device_uuid = \(device) FOR UPDATE",
                        logger: h.logger)
                    let call = #"""
                        {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"set_live_activity_message",
                         "arguments":{"device_uuid":"\#(device)","message":"after"}}}
                        """#
                    let started = ContinuousClock.now
                    let reply = await endpoint.respond(
                        method: "POST",
                        headers: ["Accept": "application/json, text/event-stream", "Content-Type": "application/json"],
                        body: Data(call.utf8))
                    let took = ContinuousClock.now - started
                    #expect(reply.status == 503 && took < .seconds(5), "\(reply.status) after \(took)")
                    let text = reply.body.map { String(decoding: $0, as: UTF8.self) } ?? ""
                    #expect(text.contains("no answer within"), "\(text)")
                    try await holder.query("ROLLBACK", logger: h.logger)
                }
                group.cancelAll()
            }
        }
    }

    @Test("set_live_activity_message by name: the row says mcp and the push carries the note")
    func setByName() async throws {
        try await Harness.with { h in
            let device = UUID()
            try await h.sql("""
                INSERT INTO device_registration (secret_hash, device_token, bundle_id, device_uuid, device_name)
                VALUES (\(secretHash("x")), 'tok-1', 'b', \(device), 'Kitchen iPad'),
                       (\(secretHash("x")), 'tok-2', 'b', \(device), 'Kitchen iPad'),
                       (\(secretHash("x")), 'tok-3', 'b', \(UUID()), 'Hall clock')
                """)
            let token = try await h.registerActivity(session: "kitchen", device: device)
            try await h.withRelay {
                try await withClient(h) { client in
                    let (content, isError) = try await client.callTool(
                        name: "set_live_activity_message",
                        arguments: ["deviceName": "kitchen ipad", "message": "Soup!"])
                    #expect(isError != true, "\(Self.text(content))")
                    #expect(Self.text(content).contains(device.uuidString.lowercased()))
                    #expect(Self.text(content).contains("its 1 active Live Activity shows it now"))
                    func carriesNote(_ push: RecordedPush) -> Bool {
                        push.payload.objectValue?["aps"]?.objectValue?["content-state"]?.objectValue?["note"]
                            == .string("Soup!")
                    }
                    let pushes = try await h.waitForPushes { $0.contains(where: carriesNote) }
                    // The device's two token rows are one device with one activity: one push, to its token.
                    let noted = pushes.filter(carriesNote)
                    #expect(noted.count == 1 && noted.first?.token == token && noted.first?.pushType == "liveactivity")
                    let (read, _) = try await client.callTool(
                        name: "get_live_activity_message", arguments: ["device_uuid": .string(device.uuidString)])
                    #expect(Self.text(read).contains("Soup!"))
                    // A device with no active activity: nothing is pushed, and the answer says so.
                    let (idle, _) = try await client.callTool(
                        name: "set_live_activity_message", arguments: ["deviceName": "Hall clock", "message": "Hi"])
                    #expect(Self.text(idle).contains("it has no active Live Activity, so nothing was pushed"),
                            "\(Self.text(idle))")
                    // Listings count in words and say when the limit may have cut them short.
                    let (two, _) = try await client.callTool(name: "list_devices", arguments: ["limit": 3])
                    #expect(Self.text(two).hasPrefix("2 devices."), "\(Self.text(two))")
                    let (one, _) = try await client.callTool(name: "list_devices", arguments: ["limit": 1])
                    #expect(Self.text(one).hasPrefix("1 device (the limit: there may be more"), "\(Self.text(one))")
                }
            }
            #expect(try await h.rows(
                "SELECT updated_by FROM device_live_activity_message WHERE device_uuid = \(device)",
                as: String.self) == ["mcp"])
        }
    }

    @Test("an update to the state already shown pushes nothing and says so; with an alert it goes out")
    func unchangedState() async throws {
        try await Harness.with { h in
            let token = try await h.registerActivity(session: "same")
            try await h.withRelay {
                try await withClient(h) { client in
                    func update(_ arguments: [String: Value]) async throws -> String {
                        let (content, isError) = try await client.callTool(
                            name: "update_live_activity", arguments: ["session_id": "same", "content_state": ["n": 1]]
                                .merging(arguments) { $1 })
                        #expect(isError != true, "\(Self.text(content))")
                        return Self.text(content)
                    }
                    #expect(try await update([:]).contains("the push is on its way"))
                    _ = try await h.waitForPushes { $0.count == 1 }
                    #expect(try await update([:]).contains("already shows that content_state, so nothing was pushed"))
                    #expect(try await update(["alert": ["title": "Still going"]]).contains("the push is on its way"))
                    // Pushes of one activity go out in the order written: had the second write pushed, its push
                    // would come before the alert's.
                    let pushes = try await h.waitForPushes { $0.contains { $0.aps["alert"] != nil } }
                    #expect(pushes.count == 2 && pushes.allSatisfy { $0.token == token })
                    #expect(pushes.last?.aps["alert"] == .object(["title": .string("Still going")]))
                    #expect(pushes.last?.contentState == ["n": .integer(1)])
                }
            }
        }
    }

    @Test("update_channel says what was sent: now, once Apple has it, nothing for a state shown or a channel ended")
    func channelSummaries() async throws {
        try await Harness.with { h in
            try await h.sql(#"""
                INSERT INTO broadcast_channel (name, bundle_id, content_state)
                VALUES ('cup', \#(Harness.bundleID), '{"n": 0}')
                """#)
            try await withClient(h) { client in
                @Sendable func update(_ arguments: [String: Value]) async throws -> String {
                    let (content, isError) = try await client.callTool(
                        name: "update_channel", arguments: ["name": "cup"].merging(arguments) { $1 })
                    #expect(isError != true, "\(Self.text(content))")
                    return Self.text(content)
                }
                // No relay yet, so Apple has not created the channel.
                #expect(try await update(["content_state": ["n": 1]]).contains("as soon as Apple has created"))
                try await h.withRelay {
                    _ = try await h.waitForBroadcasts { $0.count == 1 }
                    let updated = try await update(["content_state": ["n": 2]])
                    // The answer carries the channel as written.
                    #expect(updated.contains("every subscriber gets it now"), "\(updated)")
                    #expect(updated.contains(#""contentState":{"n":2}"#), "\(updated)")
                    #expect(try await update(["content_state": ["n": 2]]).contains("already shows that content_state"))
                    // Sent before the channel ends: an update the relay claims once its channel has ended is
                    // settled, not sent (the end carries the latest state), which made this test race its relay.
                    _ = try await h.waitForBroadcasts { $0.count == 2 }
                    #expect(try await update(["status": "ended"]).contains("Channel cup is ended now."))
                    #expect(try await update(["content_state": ["n": 3]]).contains("is ended, so nothing was sent"))
                    // Broadcasts of one channel go out in order: the state, its update, the end, and nothing more.
                    let sent = try await h.waitForBroadcasts { $0.count == 3 }
                    #expect(sent.map { $0.payload.objectValue?["aps"]?.objectValue?["event"] }
                            == [.string("update"), .string("update"), .string("end")])
                }
            }
        }
    }

    @Test("/v1/device/register takes deviceName and deviceUUID; registering again without them keeps them")
    func deviceNames() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let device = UUID()
                let first = try await api.post("/v1/device/register", """
                    {"secret":"s","deviceToken":"aa11","bundleId":"b","deviceName":"Hall","deviceUUID":"\(device)"}
                    """)
                #expect(first.status == 200)
                let again = #"{"secret":"s","deviceToken":"aa11","bundleId":"b"}"#
                #expect(try await api.post("/v1/device/register", again).status == 200)
                #expect(try await h.rows("SELECT device_name || ' ' || device_uuid::text FROM device_registration",
                                         as: String.self) == ["Hall \(device.uuidString.lowercased())"])
                let bad = try await api.post("/v1/device/register",
                                             #"{"secret":"s","deviceToken":"b","bundleId":"b","deviceUUID":"nope"}"#)
                #expect(bad.status == 400 && bad["error"] == .string("deviceUUID must be a UUID"))
                let devices = try await api.request(.GET, "/v1/devices", headers: RelayHTTP.admin)
                #expect(devices.json?.arrayValue?.first?.objectValue?["device_name"] == .string("Hall"))
                // Lengths count characters, as the document's maxLength and PostgreSQL do: 255 "é" (510 bytes) is a
                // name, 256 is one too many.
                func named(_ name: String) -> String {
                    #"{"secret":"s","deviceToken":"cc33","bundleId":"b","deviceName":"\#(name)"}"#
                }
                let longest = String(repeating: "é", count: 255)
                #expect(try await api.post("/v1/device/register", named(longest)).status == 200)
                #expect(try await h.rows("SELECT device_name FROM device_registration WHERE device_token = 'cc33'",
                                         as: String.self) == [longest])
                let tooLong = try await api.post("/v1/device/register", named(longest + "é"))
                #expect(tooLong.status == 400
                        && tooLong["error"] == .string("deviceName is longer than 255 characters"))
            }
        }
    }
}
