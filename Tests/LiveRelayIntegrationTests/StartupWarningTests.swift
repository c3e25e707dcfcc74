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
}
