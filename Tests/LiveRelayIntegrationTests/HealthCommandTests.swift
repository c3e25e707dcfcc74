import Foundation
import LiveRelayDevSupport
import LiveRelayServer
import Testing

/// `liverelay health`, the container's health check: exit 0 only when the relay answers `/ready` with 200.
@Suite("liverelay health")
struct HealthCommandTests {
    @Test("exits 0 for a ready relay (found from PORT alone, as in the image), 1 for an answer other than 200",
          .timeLimit(.minutes(5)))
    func readyRelay() async throws {
        try await Harness.with { h in
            let (relay, port) = try await RelayProcess.serve(h)
            defer { relay.stop(signal: SIGKILL) }
            let check = try RelayProcess(arguments: ["health"], environment: ["PORT": String(port), "HOST": "0.0.0.0"])
            #expect(try await check.waitForExit() == 0, "health said: \(check.output)")
            #expect(check.output.contains("answered 200"))
            let wrong = try RelayProcess(
                arguments: ["health", "--url", "http://127.0.0.1:\(port)/no-such-route"], environment: [:])
            #expect(try await wrong.waitForExit() == 1)
            #expect(wrong.output.contains("answered 404"), "health said: \(wrong.output)")
        }
    }

    @Test("exits 1 with the reason when nothing answers; refuses a URL that is not http(s) with its own usage")
    func notReady() async throws {
        let port = LocalPostgres.freePort()
        let down = try RelayProcess(arguments: ["health", "--url", "http://127.0.0.1:\(port)/ready", "--timeout", "2"],
                                    environment: [:])
        #expect(try await down.waitForExit() == 1)
        #expect(down.output.contains("http://127.0.0.1:\(port)/ready did not answer: Connection refused"),
                "health said: \(down.output)")

        let invalid = try RelayProcess(arguments: ["health", "--url", "ftp://example.invalid/"], environment: [:])
        #expect(try await invalid.waitForExit() != 0)
        #expect(invalid.output.contains("--url must be an http:// or https:// URL"), "health said: \(invalid.output)")
        #expect(invalid.output.contains("Usage: liverelay health"), "the usage shown is health's: \(invalid.output)")
        let hostless = try RelayProcess(arguments: ["health", "--url", "http:/ready"], environment: [:])
        #expect(try await hostless.waitForExit() == 64)
        #expect(hostless.output.contains("got http:/ready"), "health said: \(hostless.output)")
    }
}
