import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// The channel routes as an admin and an app use them: create, read with a device token, follow on the stream,
/// update, start activities that follow the channel, delete.
@Suite("Broadcast channel routes")
struct ChannelRoutesTests {
    @Test("POST, GET, PATCH, start, DELETE: answers, the SSE channel, and what reaches Apple")
    func lifecycleOverHTTP() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let created = try await api.post("/v1/channels", #"""
                    {"name": "route-1", "attributesType": "MatchAttributes", "contentState": {"score": "0-0"}}
                    """#, headers: RelayHTTP.admin)
                #expect(created.status == 201, "\(created.text)")
                #expect(created["status"] == .string("active") && created["fcmTopic"] == .string("liverelay.route-1"))
                let taken = try await api.post("/v1/channels", #"{"name": "route-1"}"#, headers: RelayHTTP.admin)
                #expect(taken.status == 409 && taken.text.contains("a channel named route-1 exists already"),
                        "\(taken.text)")
                let badName = try await api.post("/v1/channels", #"{"name": "no spaces"}"#, headers: RelayHTTP.admin)
                #expect(badName.status == 400 && badName.text.contains("FCM topic"), "\(badName.text)")
                #expect(try await api.post("/v1/channels", #"{"name": "x"}"#).status == 401)
                // Every documented key is present, null until set (Apple's id comes once Apple created it).
                let keys = Set(created.json?.objectValue?.keys.map { $0 } ?? [])
                #expect(keys.isSuperset(of: [
                    "name", "status", "apnsChannelId", "fcmTopic", "contentState", "error", "lastSend",
                ]))
                let nul = try await api.post("/v1/channels", #"{"name": "nul", "contentState": {"a\u0000": 1}}"#,
                                             headers: RelayHTTP.admin)
                #expect(nul.status == 400 && nul.text.contains("NUL"), "\(nul.text)")

                // An app reads the channel with its device token, and follows it on the stream.
                let device = UUID()
                let minted = try await api.post("/v1/devices/\(device)/token", "{}", headers: RelayHTTP.admin)
                let token = try #require(minted["token"]?.stringValue)
                let bearer = [("Authorization", "Bearer \(token)")]
                try await h.waitUntil("SELECT apns_channel_id IS NOT NULL FROM broadcast_channel")
                let read = try await api.request(.GET, "/v1/channels/route-1", headers: bearer)
                let appleID = h.simulator.channels()[0].channelID
                #expect(read.status == 200 && read["apnsChannelId"] == .string(appleID))
                #expect(try await api.request(.GET, "/v1/channels/nope", headers: bearer).status == 404)
                let patchedByDevice = try await api.request(.PATCH, "/v1/channels/route-1", json: "{}", headers: bearer)
                #expect(patchedByDevice.status == 403)
                let stream = try await SSEClient(port: port, query: "channel=channel:route-1", headers: bearer)
                #expect(stream.status == 200)
                // A name no channel has may be followed (its events come if one is made), and the stream says so.
                let typo = try await SSEClient(
                    port: port, query: "channel=channel:route-1&channel=channel:rute-1", headers: bearer)
                let hinted = try await pollUntil(timeout: .seconds(5)) {
                    typo.commentBlocks.contains { $0.contains("no channel is named rute-1 yet") }
                }
                #expect(hinted && typo.commentBlocks.filter { $0.contains("no channel is named") }.count == 1,
                        "\(typo.rawBlocks)")
                typo.close()

                // An empty status is not "no change": it names no status (400).
                let emptyStatus = try await api.request(.PATCH, "/v1/channels/route-1", json: #"{"status": ""}"#,
                                                        headers: RelayHTTP.admin)
                #expect(emptyStatus.status == 400 && emptyStatus.text.contains("status must be"), "\(emptyStatus.text)")
                let patched = try await api.request(.PATCH, "/v1/channels/route-1",
                                                    json: #"{"contentState": {"score": "1-0"}}"#,
                                                    headers: RelayHTTP.admin)
                #expect(patched.status == 200 && patched["contentState"] == .object(["score": .string("1-0")]))
                #expect(patched["push"] == .string("queued"), "\(patched.text)")
                let events = try await stream.wait { $0.contains { $0.name == "channel-update" } }
                let update = try #require(events.first { $0.name == "channel-update" })
                let data = try JSONValue(parsing: update.data).objectValue
                #expect(data?["channel"] == .string("route-1") && data?["status"] == .string("active"))
                #expect(data?["content_state"] == .object(["score": .string("1-0")]))
                _ = try await h.waitForBroadcasts { $0.last?.contentState == ["score": .string("1-0")] }
                // The same state again sends nothing, and the answer says so.
                let same = try await api.request(.PATCH, "/v1/channels/route-1",
                                                 json: #"{"contentState": {"score": "1-0"}, "priority": 5}"#,
                                                 headers: RelayHTTP.admin)
                #expect(same.status == 200 && same["push"] == .string("unchanged") && same["priority"] == .integer(5),
                        "\(same.text)")

                // Push-to-start of activities that follow the channel.
                let startToken = randomToken()
                let registered = try await api.post("/v1/device/register", #"""
                    {"secret":"s-chan","deviceToken":"\#(randomToken())","deviceUUID":"\#(device)",
                     "pushToStartTokens":{"MatchAttributes":"\#(startToken)"}}
                    """#)
                #expect(registered.status == 200, "\(registered.text)")
                let started = try await api.post("/v1/channels/route-1/start",
                                                 #"{"deviceUUIDs": ["\#(device)"], "alert": {"title": "Kick-off"}}"#,
                                                 headers: RelayHTTP.admin)
                #expect(started.status == 200 && started["queued"] == .integer(1), "\(started.text)")
                let start = try #require(try await h.waitForPushes { !$0.isEmpty }.first)
                #expect(start.token == startToken && start.event == "start")
                #expect(start.aps["input-push-channel"] == .string(h.simulator.channels()[0].channelID))
                #expect(start.aps["attributes-type"] == .string("MatchAttributes"))
                #expect(start.contentState == ["score": .string("1-0")])
                #expect(started["notQueued"] == .array([]))
                // Devices that get no start are named, with why.
                let plain = UUID(), android = UUID(), unknown = UUID()
                let plainBody = #"{"secret":"s-chan","deviceToken":"\#(randomToken())","deviceUUID":"\#(plain)","#
                    + #""pushToStartTokens":{"OtherAttributes":"\#(randomToken())"}}"#
                let androidBody = #"{"secret":"s-chan","deviceToken":"\#(randomToken())","deviceUUID":"\#(android)","#
                    + #""platform":"android"}"#
                for body in [plainBody, androidBody] {
                    let reply = try await api.post("/v1/device/register", body)
                    #expect(reply.status == 200, "\(reply.text)")
                }
                let missed = try await api.post(
                    "/v1/channels/route-1/start", #"{"deviceUUIDs": ["\#(unknown)", "\#(plain)", "\#(android)"]}"#,
                    headers: RelayHTTP.admin)
                #expect(missed.status == 200 && missed["queued"] == .integer(0), "\(missed.text)")
                let misses = missed["notQueued"]?.arrayValue?.compactMap(\.objectValue) ?? []
                #expect(misses.map { $0["deviceUUID"] } == [unknown, plain, android].map {
                    .string($0.uuidString.lowercased())
                })
                #expect(misses.map { $0["reason"] } == [.string("unknownDevice"), .string("noPushToStartToken"),
                                                         .string("notIOS")])
                #expect(misses[1]["message"]?.stringValue?.contains("push-to-start token for MatchAttributes") == true)
                // The devices listing says which types each device can be started with.
                let devices = try await api.request(.GET, "/v1/devices", headers: RelayHTTP.admin)
                let byUUID = Dictionary(uniqueKeysWithValues: (devices.json?.arrayValue ?? []).compactMap {
                    device -> (String, JSONValue)? in
                    guard let uuid = device.objectValue?["device_uuid"]?.stringValue else { return nil }
                    return (uuid, device)
                })
                let phone = byUUID[device.uuidString.lowercased()]?.objectValue
                #expect(phone?["has_push_to_start"] == .bool(true), "\(devices.text)")
                #expect(phone?["push_to_start_types"] == .array([.string("MatchAttributes")]), "\(devices.text)")
                #expect(byUUID[plain.uuidString.lowercased()]?.objectValue?["push_to_start_types"]
                    == .array([.string("OtherAttributes")]))

                let deleted = try await api.request(.DELETE, "/v1/channels/route-1", headers: RelayHTTP.admin)
                #expect(deleted.status == 204)
                let streamed = try await stream.wait { $0.contains { $0.name == "channel-end" } }
                // The unchanged PATCH sent nothing: one update before the end (a channel's sends go in order), on
                // Apple's side and on the stream.
                let sent = try await h.waitForBroadcasts { $0.contains { $0.aps["event"] == .string("end") } }
                let updates = sent.filter {
                    $0.aps["event"] == .string("update") && $0.contentState == ["score": .string("1-0")]
                }
                #expect(updates.count == 1, "\(sent.map(\.aps))")
                #expect(streamed.filter { $0.name == "channel-update" }.count == 1, "\(streamed.map(\.name))")
                try await h.waitUntil(
                    "SELECT count(*) = 1 FROM delivery_log WHERE event_type = 'delete' AND status = 'sent'")
                #expect(h.simulator.channels().isEmpty)
                let tooLate = try await api.request(.PATCH, "/v1/channels/route-1",
                                                    json: #"{"contentState": {"score": "2-0"}}"#,
                                                    headers: RelayHTTP.admin)
                #expect(tooLate.status == 200 && tooLate["push"] == .string("notActive"), "\(tooLate.text)")
                let afterwards = try await api.post("/v1/channels/route-1/start",
                                                    #"{"deviceUUIDs": ["\#(device)"]}"#, headers: RelayHTTP.admin)
                #expect(afterwards.status == 409)
                let badAlert = try await api.post("/v1/channels/route-1/start",
                                                  #"{"deviceUUIDs": ["\#(device)"], "alert": {"body": {}}}"#,
                                                  headers: RelayHTTP.admin)
                #expect(badAlert.status == 400 && badAlert.text.contains("alert.body"))
                #expect(try await api.request(.DELETE, "/v1/channels/nope", headers: RelayHTTP.admin).status == 404)
                let listed = try await api.request(.GET, "/v1/channels?status=deleted", headers: RelayHTTP.admin)
                #expect(listed.json?.arrayValue?.count == 1)
                // A deleted channel's row keeps its name: the refusal says so, and how to free it.
                let reused = try await api.post("/v1/channels", #"{"name": "route-1"}"#, headers: RelayHTTP.admin)
                #expect(reused.status == 409 && reused["error"] == .string(
                    "a channel named route-1 exists already (deleted; its row keeps its history): choose another "
                        + "name, or free this one with DELETE FROM broadcast_channel WHERE name = 'route-1'"),
                        "\(reused.text)")
                try await h.sql("DELETE FROM broadcast_channel WHERE name = 'route-1'")
                let again = try await api.post("/v1/channels", #"{"name": "route-1"}"#, headers: RelayHTTP.admin)
                #expect(again.status == 201 && again["status"] == .string("active"), "\(again.text)")
                stream.close()
            }
        }
    }

    @Test("a channel whose name holds % is reached by its percent-encoded path")
    func percentInName() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let created = try await api.post("/v1/channels", #"{"name": "50%off"}"#, headers: RelayHTTP.admin)
                #expect(created.status == 201, "\(created.text)")
                // A client sends the name's % as %25.
                let read = try await api.request(.GET, "/v1/channels/50%25off", headers: RelayHTTP.admin)
                #expect(read.status == 200 && read["name"] == .string("50%off"), "\(read.text)")
                let patched = try await api.request(
                    .PATCH, "/v1/channels/50%25off", json: #"{"contentState": {"n": 1}}"#, headers: RelayHTTP.admin)
                #expect(patched.status == 200 && patched["contentState"] == .object(["n": .integer(1)]),
                        "\(patched.text)")
                let deleted = try await api.request(.DELETE, "/v1/channels/50%25off", headers: RelayHTTP.admin)
                #expect(deleted.status == 204, "\(deleted.text)")
            }
        }
    }

    @Test("a stream is told of each channel it follows that no row names, until the channel is made")
    func missingChannelHint() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let api = RelayHTTP(port: port)
                let created = try await api.post("/v1/channels", #"{"name": "hint-1"}"#, headers: RelayHTTP.admin)
                #expect(created.status == 201, "\(created.text)")
                let query = "channel=channel:hint-1&channel=channel:hint-2"
                // The first stream finds hint-1 (remembered a few seconds); the second asks about hint-2 alone.
                for _ in 0..<2 {
                    let stream = try await SSEClient(port: port, query: query, headers: RelayHTTP.admin)
                    let hinted = try await pollUntil(timeout: .seconds(5)) {
                        stream.commentBlocks.contains { $0.contains("no channel is named hint-2 yet") }
                    }
                    #expect(hinted && stream.commentBlocks.filter { $0.contains("no channel is named") }.count == 1,
                            "\(stream.rawBlocks)")
                    stream.close()
                }
                // A name not found is asked again by the next stream: made now, it is no longer hinted missing.
                let made = try await api.post("/v1/channels", #"{"name": "hint-2"}"#, headers: RelayHTTP.admin)
                #expect(made.status == 201, "\(made.text)")
                let stream = try await SSEClient(port: port, query: query, headers: RelayHTTP.admin)
                let patched = try await api.request(.PATCH, "/v1/channels/hint-2", json: #"{"contentState": {"n": 1}}"#,
                                                    headers: RelayHTTP.admin)
                #expect(patched.status == 200, "\(patched.text)")
                // The event comes after anything the stream's head says.
                _ = try await stream.wait { $0.contains { $0.name == "channel-update" } }
                #expect(!stream.commentBlocks.contains { $0.contains("no channel is named") }, "\(stream.rawBlocks)")
                stream.close()
            }
        }
    }
}
