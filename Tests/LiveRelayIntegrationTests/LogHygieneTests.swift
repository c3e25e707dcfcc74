import APNsSimulator
import Foundation
import LiveRelayCore
import LiveRelayServer
import Testing

/// Secrets and tokens never reach the logs, even at trace level.
@Suite("Log hygiene")
struct LogHygieneTests {
    @Test("no log line holds a pairing secret, a push token, the admin token or a device token",
          .timeLimit(.minutes(5)))
    func noSecretsInLogs() async throws {
        try await Harness.with { h in
            let (relay, port) = try await RelayProcess.serve(h, environment: ["LOG_LEVEL": "trace"])
            defer { relay.stop(signal: SIGKILL) }
            let api = RelayHTTP(port: port)
            let secret = "pairing-secret-\(UUID().uuidString)"
            let deviceToken = randomToken(), activityToken = randomToken(), deadToken = randomToken()
            var faults = SimulatorFaults()
            faults.tokenErrors[deadToken] = "Unregistered"
            h.simulator.setFaults(faults)
            _ = try await api.post("/v1/device/register", #"{"secret":"\#(secret)","deviceToken":"\#(deviceToken)"}"#)
            _ = try await api.post("/v1/device/register", #"{"secret":"\#(secret)","deviceToken":"\#(deadToken)"}"#)
            _ = try await api.post(
                "/v1/activity/register",
                #"{"secret":"\#(secret)","sessionID":"ses_log","activityToken":"\#(activityToken)"}"#)
            let event = try await api.post(
                "/v1/event",
                #"{"secret":"\#(secret)","eventType":"progress","sessionID":"ses_log","contentState":{"n":1}}"#)
            #expect(event["sent"] == .integer(1))
            let alert = try await api.post(
                "/v1/event", #"{"secret":"\#(secret)","eventType":"permission","sessionID":"ses_log"}"#)
            #expect(alert["sent"] == .integer(1) && alert["failed"] == .integer(1))
            let minted = try await api.post("/v1/devices/\(UUID())/token", "{}", headers: RelayHTTP.admin)
            guard case .string(let issued)? = minted["token"] else { Issue.record("no token"); return }
            _ = try await api.request(
                .GET, "/v1/stream?channel=session:ses_log", headers: [("X-Relay-Secret", "wrong")])
            _ = try await api.request(
                .GET, "/rest/v1/device_live_activity_message", headers: [("Authorization", "Bearer \(issued)")])
            _ = try await relay.terminate(within: .seconds(30))
            let output = relay.output
            #expect(output.count > 1000, "trace logging produced too little to judge")
            for (name, value) in [("secret", secret), ("device token", deviceToken), ("activity token", activityToken),
                ("dead token", deadToken), ("admin token", Harness.adminToken), ("device token issued", issued),
                                  ("secret hash", secretHash(secret))] {
                #expect(!output.contains(value), "the log contains the \(name)")
            }
        }
    }

    @Test("a client that breaks a request off mid-body is no error of the relay's: nothing at error level")
    func abortedBodyIsNoError() async throws {
        try await Harness.with { h in
            let (relay, port) = try await RelayProcess.serve(h, environment: ["LOG_LEVEL": "debug"])
            defer { relay.stop(signal: SIGKILL) }
            for path in ["/v1/event", "/v1/device/register"] {
                let aborted = try RawConnection(port: port)
                try aborted.send("""
                    POST \(path) HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n\
                    Content-Length: 100\r\n\r\n{"secret":
                    """)
                aborted.close()
            }
            let bothLogged = try await pollUntil(timeout: .seconds(10)) {
                relay.output.components(separatedBy: "request ended before its body").count == 3
            }
            #expect(bothLogged, "\(relay.output)")
            #expect(try await RelayHTTP(port: port).request(.GET, "/health").status == 200)
            _ = try await relay.terminate(within: .seconds(30))
            let errors = relay.output.split(separator: "\n")
                .filter { $0.contains(" error ") || $0.contains(" critical ") }
            #expect(errors.isEmpty, "\(errors)")
        }
    }
}
