import Foundation
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
}
