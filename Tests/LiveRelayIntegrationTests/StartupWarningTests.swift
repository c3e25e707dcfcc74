import Foundation
import LiveRelayCore
import Testing

/// What `liverelay serve` says at start-up about settings that will not do what their author meant.
@Suite("Start-up warnings")
struct StartupWarningTests {
    @Test("a misspelt setting and a missing admin token are named in the log; the relay starts")
    func warnings() async throws {
        try await Harness.with { h in
            let (relay, port) = try await RelayProcess.serve(
                h, environment: ["LIVERELAY_WORKER": "4", "LIVERELAY_ADMIN_TOKEN": ""])
            defer { relay.stop(signal: SIGTERM) }
            let output = relay.output
            #expect(output.contains("""
                LIVERELAY_WORKER is not a setting LiveRelay reads (did you mean LIVERELAY_WORKERS?); it is ignored
                """), "\(output)")
            #expect(output.contains(
                "LIVERELAY_ADMIN_TOKEN is not set: the admin routes, the dashboard and MCP answer 401"))
            let admin = try await RelayHTTP(port: port).request(.GET, "/v1/live-activities", headers: RelayHTTP.admin)
            #expect(admin.status == 401, "as the warning said: \(admin.text)")
        }
    }

    @Test("LOG_FORMAT=json: everything the relay writes is a JSON object per line, its metadata beside the message")
    func jsonLog() async throws {
        try await Harness.with { h in
            let (relay, _) = try await RelayProcess.serve(
                h, environment: ["LOG_FORMAT": "json", "LIVERELAY_WORKER": "4"])
            #expect(relay.stop(signal: SIGTERM) == 0)
            let lines = relay.output.split(separator: "\n")
            var messages: [String: [String: JSONValue]] = [:]
            for line in lines {
                let object = (try? JSONValue(parsing: String(line)))?.objectValue
                #expect(object != nil, "not a JSON object: \(line)")
                guard let object, let message = object["message"]?.stringValue else { continue }
                #expect(["time", "level", "logger"].allSatisfy { object[$0]?.stringValue != nil }, "\(line)")
                #expect(object["time"]?.stringValue?.hasSuffix("Z") == true, "\(line)")
                messages[message] = object
            }
            let listening = messages["liverelay listening"]
            #expect(listening?["level"] == .string("notice"), "\(lines)")
            #expect(listening?["version"] == .string(LiveRelayVersion.current)
                    && listening?["address"]?.stringValue?.hasPrefix("http://") == true, "\(lines)")
            #expect(messages.keys.contains { $0.contains("LIVERELAY_WORKER is not a setting") }, "\(lines)")
        }
    }

    @Test("a relay whose shared settings differ from the last one's says which it changed, from what to what")
    func sharedSettingChanged() async throws {
        try await Harness.with { h in
            let (first, _) = try await RelayProcess.serve(h, environment: ["APNS_DEFAULT_BUNDLE_ID": "com.example.a"])
            first.stop(signal: SIGTERM)
            #expect(!first.output.contains("a setting every relay of this database shares changed"), "\(first.output)")
            let (second, _) = try await RelayProcess.serve(
                h, environment: ["LIVERELAY_PRIORITY10_PER_HOUR": "240", "APNS_DEFAULT_BUNDLE_ID": ""])
            defer { second.stop(signal: SIGTERM) }
            let output = second.output
            for line in ["priority10_per_hour 120 → 240", "default_bundle_id com.example.a → (unset)"] {
                #expect(output.contains("a setting every relay of this database shares changed: \(line); the relay "
                    + "that starts last decides it for all of them"), "\(output)")
            }
            #expect(!output.contains("fcm_enabled"), "an unchanged setting is not named: \(output)")
            #expect(try await h.rows("""
                SELECT value FROM relay_setting WHERE name IN ('priority10_per_hour', 'default_bundle_id')
                """, as: String.self) == ["240"])
        }
    }

    @Test("a relay that signs device tokens with another secret than the one before it says so, naming no secret")
    func tokenSecretDiffers() async throws {
        try await Harness.with { h in
            let warning = "this relay signs device tokens with another secret than the relay of this database"
            let (generated, _) = try await RelayProcess.serve(h)
            generated.stop(signal: SIGTERM)
            let one = "first-secret-0123456789", two = "second-secret-0123456789"
            let (first, _) = try await RelayProcess.serve(h, environment: ["LIVERELAY_TOKEN_SECRET": one])
            first.stop(signal: SIGTERM)
            let (second, _) = try await RelayProcess.serve(h, environment: ["LIVERELAY_TOKEN_SECRET": two])
            second.stop(signal: SIGTERM)
            let (same, _) = try await RelayProcess.serve(h, environment: ["LIVERELAY_TOKEN_SECRET": two])
            same.stop(signal: SIGTERM)
            #expect(!generated.output.contains(warning), "\(generated.output)")
            #expect(first.output.contains(warning), "the generated secret, then a configured one: \(first.output)")
            #expect(second.output.contains(warning), "\(second.output)")
            #expect(!same.output.contains(warning), "the same secret again: \(same.output)")
            for relay in [first, second, same] {
                #expect(!relay.output.contains(one) && !relay.output.contains(two), "a secret in the log")
            }
        }
    }

    @Test("start-up raises the soft limit on open files to the hard one, and names a hard limit that is low")
    func openFiles() async throws {
        try await Harness.with { h in
            let hard = Int(Self.openFilesLimits(of: getpid())?.hard ?? 0)
            try #require(hard >= 1_024, "this machine's own hard limit is \(hard)")
            let (raised, _) = try await RelayProcess.serve(h, openFiles: (soft: 256, hard: hard))
            #expect(Self.openFilesLimits(of: raised.pid).map { [$0.soft, $0.hard] } == [UInt64(hard), UInt64(hard)])
            raised.stop(signal: SIGTERM)
            #expect(raised.output.contains("from=256 to=\(hard)"), "\(raised.output)")
            #expect(raised.output.contains("open files limit raised to the hard limit"), "\(raised.output)")
            #expect(!raised.output.contains("files may be open") || hard < 8_192, "\(raised.output)")

            let (low, _) = try await RelayProcess.serve(h, openFiles: (soft: 512, hard: 1_024))
            defer { low.stop(signal: SIGTERM) }
            #expect(low.output.contains("at most 1024 files may be open"), "\(low.output)")
            #expect(low.output.contains("raise the hard limit"), "\(low.output)")
        }
    }

    /// The "Max open files" line of /proc/<pid>/limits: soft and hard.
    static func openFilesLimits(of pid: pid_t) -> (soft: UInt64, hard: UInt64)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/limits", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("Max open files") }) else {
            return nil
        }
        let numbers = line.split(separator: " ").compactMap { UInt64($0) }
        guard numbers.count == 2 else { return nil }
        return (numbers[0], numbers[1])
    }
}
