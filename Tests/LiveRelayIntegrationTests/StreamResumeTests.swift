import Foundation
import LiveRelayCore
import Testing

/// A client that resumes far behind: what it missed comes in bounded pages, none lost or repeated.
@Suite("SSE resume in pages")
struct StreamResumeTests {
    @Test("a client 1,100 events behind gets 1,024 and an answer that ends, then the rest, then live events once")
    func pages() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let start = try await h.rows("SELECT coalesce(max(seq), 0) FROM broadcast_log", as: Int64.self)[0]
                // One statement, 1,100 devices' messages: 1,100 events, one per device channel.
                try await h.sql("""
                    INSERT INTO device_live_activity_message (device_uuid, message)
                    SELECT gen_random_uuid(), 'missed ' || n FROM generate_series(1, 1100) AS n
                    """)
                let expected = (1...1100).map { "missed \($0)" }
                func messages(_ events: [SSEClient.Event]) -> [String] {
                    events.compactMap { $0.json?.objectValue?["message"]?.stringValue }
                }

                let first = try await SSEClient(
                    port: port, query: "channel=*", headers: RelayHTTP.admin + [("Last-Event-ID", "\(start)")])
                #expect(first.status == 200)
                #expect(try await pollUntil(timeout: .seconds(15)) { first.ended }, "the page's answer did not end")
                // Told to come back at once (no reconnection delay), and why.
                let head = first.rawBlocks.first ?? ""
                #expect(head.hasPrefix("retry: 0\n: more events follow"), "\(head)")
                let page = first.received
                #expect(page.count == 1024)
                #expect(Set(messages(page)).count == 1024 && Set(messages(page)).isSubset(of: expected))
                let pageIDs = page.compactMap(\.id)
                #expect(pageIDs == pageIDs.sorted() && pageIDs.first.map { $0 > start } == true)

                let lastID = try #require(pageIDs.last)
                let rest = try await SSEClient(
                    port: port, query: "channel=*", headers: RelayHTTP.admin + [("Last-Event-ID", "\(lastID)")])
                let restEvents = try await rest.wait { $0.count >= 76 }
                #expect(restEvents.count == 76)
                #expect(Set(messages(page + restEvents)) == Set(expected), "lost or repeated across the pages")
                // The stream that caught up stays open: a live event arrives once.
                try await h.sql("UPDATE device_live_activity_message SET message = 'live' WHERE message = 'missed 1'")
                let all = try await rest.wait { messages($0).contains("live") }
                #expect(messages(all).filter { $0 == "live" }.count == 1)
                #expect(all.count == 77)
                #expect(!rest.ended, "the stream that caught up ended")
                rest.close()
            }
        }
    }

    @Test("a stream with few events among many is resumed a bounded read at a time, its position moved on by an id")
    func sparse() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let device = UUID(), marker = UUID()
                let channel = "device:\(device.uuidString.lowercased())"
                let start = try await h.rows("SELECT coalesce(max(seq), 0) FROM broadcast_log", as: Int64.self)[0]
                func message(_ text: String, to uuid: UUID? = nil) async throws {
                    try await h.sql("""
                        INSERT INTO device_live_activity_message (device_uuid, message)
                        VALUES (\(uuid ?? device), \(text))
                        ON CONFLICT (device_uuid) DO UPDATE SET message = excluded.message
                        """)
                }
                // A live stream of another device's: its event, written last, says the hub has read all before it.
                let watcher = try await SSEClient(
                    port: port, query: "channel=device:\(marker.uuidString.lowercased())", headers: RelayHTTP.admin)
                // One event of this device's, 120,000 of others', then another of its own: more than one read's
                // worth of the log (100,000 sequences) between the two.
                try await message("before")
                try await h.sql("""
                    INSERT INTO broadcast_log (channels, event, data)
                    SELECT ARRAY['device:someone-else'], 'live-activity-message', '{}' FROM generate_series(1, 120000)
                    """)
                try await message("after")
                try await message("read", to: marker)
                // The hub reads the 120,000 rows first, 2,000 a read: 6 s alone, and past 30 s once with the whole
                // suite on one core.
                try await watcher.wait(timeout: .seconds(90)) { !$0.isEmpty }
                watcher.close()
                let first = try await SSEClient(
                    port: port, query: "channel=\(channel)", headers: RelayHTTP.admin + [("Last-Event-ID", "\(start)")])
                #expect(try await pollUntil(timeout: .seconds(15)) { first.ended }, "the answer did not end")
                // The first event, then the position the read went to, as an id alone: no event is dispatched for it.
                let blocks = first.rawBlocks
                #expect(blocks.first?.hasPrefix("retry: 0\n") == true, "\(blocks.prefix(3))")
                #expect(first.received.first?.json?.objectValue?["message"] == .string("before"), "\(first.received)")
                let position = try #require(blocks.last.flatMap { $0.hasPrefix("id: ") ? Int64($0.dropFirst(4)) : nil },
                                            "\(blocks.suffix(2))")
                #expect(position == start + 100_000 && !blocks.last!.contains("data:"), "\(blocks.suffix(2))")
                // From there the rest, and the stream stays open.
                let rest = try await SSEClient(port: port, query: "channel=\(channel)",
                                               headers: RelayHTTP.admin + [("Last-Event-ID", "\(position)")])
                let after = try await rest.wait { !$0.isEmpty }
                #expect(after.map { $0.json?.objectValue?["message"] } == [.string("after")], "\(after)")
                try await message("live")
                let live = try await rest.wait { $0.count >= 2 }
                #expect(live[1].json?.objectValue?["message"] == .string("live") && !rest.ended)
                rest.close()
            }
        }
    }

    @Test("a client whose missed events were pruned gets a resync event, then what is left; a later id gets none")
    func pruned() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let device = UUID()
                let channel = "device:\(device.uuidString.lowercased())"
                let start = try await h.rows("SELECT coalesce(max(seq), 0) FROM broadcast_log", as: Int64.self)[0]
                // Both events are read by the hub before one is pruned, as any event a day old has been (a row
                // deleted before the hub reads it is a gap in the log, which the hub waits to pass).
                let watcher = try await SSEClient(port: port, query: "channel=\(channel)", headers: RelayHTTP.admin)
                try await h.sql(
                    "INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'old')")
                let old = try await h.rows("SELECT max(seq) FROM broadcast_log", as: Int64.self)[0]
                try await h.sql(
                    "UPDATE device_live_activity_message SET message = 'kept' WHERE device_uuid = \(device)")
                _ = try await watcher.wait { $0.count >= 2 }
                watcher.close()
                // The first event is two days old and pruned as the hub prunes (every 10 minutes).
                try await h.sql("UPDATE broadcast_log SET created_at = now() - interval '2 days' WHERE seq = \(old)")
                #expect(try await h.rows("SELECT liverelay_prune_broadcast_log(interval '24 hours')", as: Int64.self)
                    == [1])

                let behind = try await SSEClient(
                    port: port, query: "channel=\(channel)", headers: RelayHTTP.admin + [("Last-Event-ID", "\(start)")])
                let events = try await behind.wait { $0.count >= 2 }
                #expect(events.map(\.name) == ["resync", "live-activity-message"])
                let resync = events[0].json?.objectValue
                #expect(events[0].id == nil, "a resync has no id: the client's own stays")
                #expect(resync?["last_event_id"] == .integer(start) && resync?["pruned_through"] == .integer(old))
                #expect(resync?["reason"] == .string("pruned"))
                #expect(resync?["message"]?.stringValue?.contains("read the current state again") == true)
                #expect(events[1].json?.objectValue?["message"] == .string("kept"))
                behind.close()

                // A client whose id is the pruned one's (or later) missed nothing that is gone.
                let current = try await SSEClient(
                    port: port, query: "channel=\(channel)", headers: RelayHTTP.admin + [("Last-Event-ID", "\(old)")])
                let kept = try await current.wait { $0.count >= 1 }
                try await h.sql("UPDATE device_live_activity_message SET message = 'new' WHERE device_uuid = \(device)")
                let after = try await current.wait { $0.count >= 2 }
                #expect(kept.first?.name == "live-activity-message" && after.map(\.name).allSatisfy { $0 != "resync" })
                current.close()

                // An id ahead of the log (read from a database since replaced) is told so too, and follows on.
                let head = try await h.rows("SELECT liverelay_broadcast_log_head()", as: Int64.self)[0]
                #expect(head == (try await h.rows("SELECT max(seq) FROM broadcast_log", as: Int64.self)[0]))
                let stranger = try await SSEClient(
                    port: port, query: "channel=\(channel)",
                    headers: RelayHTTP.admin + [("Last-Event-ID", "\(head + 1000)")])
                let told = try await stranger.wait { $0.count >= 1 }[0]
                #expect(told.name == "resync" && told.json?.objectValue?["reason"] == .string("ahead"), "\(told)")
                #expect(told.json?.objectValue?["head"] == .integer(head))
                try await h.sql(
                    "UPDATE device_live_activity_message SET message = 'newer' WHERE device_uuid = \(device)")
                let followed = try await stranger.wait { $0.count >= 2 }
                #expect(followed[1].json?.objectValue?["message"] == .string("newer"))
                stranger.close()

                // An id that no event can have (a client's bug) is told so too, rather than taken as nothing missed.
                let garbled = try await SSEClient(
                    port: port, query: "channel=\(channel)", headers: RelayHTTP.admin + [("Last-Event-ID", "seven")])
                let said = try await garbled.wait { $0.count >= 1 }[0]
                #expect(said.name == "resync" && said.id == nil, "\(said)")
                #expect(said.json?.objectValue?["reason"] == .string("unreadable"), "\(said)")
                #expect(said.json?.objectValue?["message"]?.stringValue?.contains("Last-Event-ID seven is not") == true)
                try await h.sql(
                    "UPDATE device_live_activity_message SET message = 'newest' WHERE device_uuid = \(device)")
                let live = try await garbled.wait { $0.count >= 2 }
                #expect(live[1].json?.objectValue?["message"] == .string("newest"))
                garbled.close()
            }
        }
    }
}
