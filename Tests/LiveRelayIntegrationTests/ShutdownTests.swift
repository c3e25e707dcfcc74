import APNsSimulator
import Foundation
import LiveRelayCore
import Testing

/// SIGTERM ends `liverelay serve` with status 0 within 10 s whatever its HTTP connections are doing, and what was
/// committed is still delivered afterwards.
@Suite("Shutdown")
struct ShutdownTests {
    static let limit = Duration.seconds(10)
    static let admin = "Authorization: Bearer \(Harness.adminToken)"

    /// Sends SIGTERM and expects status 0 within the limit (the relay's log tail says why when not).
    static func expectCleanExit(_ relay: RelayProcess, _ situation: String,
                                sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let (status, elapsed) = try await relay.terminate(within: limit)
        #expect(status == 0 && elapsed < limit,
                """
                SIGTERM \(situation): status \(String(describing: status)) after \(elapsed); \
                \(relay.output.suffix(600))
                """,
                sourceLocation: sourceLocation)
    }

    /// Opens an SSE stream on a raw connection and waits for the relay's greeting.
    static func openStream(port: Int, channel: String, headers: [String] = []) async throws -> RawConnection {
        let connection = try RawConnection(port: port)
        try connection.get("/v1/stream?channel=\(channel)", headers: [admin] + headers)
        let connected = try await connection.read { $0.contains(": connected") }
        #expect(connected, "the stream did not open: \(connection.text)")
        return connection
    }

    @Test("idle keep-alive connections are closed and do not hold the exit up", .timeLimit(.minutes(5)))
    func idleKeepAlive() async throws {
        try await Harness.with { h in
            let (relay, port) = try await RelayProcess.serve(h)
            var connections: [RawConnection] = []
            for _ in 0..<50 {
                let connection = try RawConnection(port: port)
                try connection.get("/health")
                let answered = try await connection.read { $0.contains("\"ok\":true") }
                #expect(answered, "no answer on a keep-alive connection: \(connection.text)")
                connections.append(connection)
            }
            try await Self.expectCleanExit(relay, "with idle keep-alive connections")
            for connection in connections {
                let closed = try await connection.readUntilClosed(timeout: .seconds(2))
                #expect(closed, "a keep-alive connection stayed open after the relay stopped")
            }
        }
    }

    @Test("open streams end with a last comment and resume with Last-Event-ID on another instance",
          .timeLimit(.minutes(5)))
    func openStreamsEndAndResume() async throws {
        try await Harness.with { h in
            try await h.registerActivity(session: "s-shutdown")
            let (relay, port) = try await RelayProcess.serve(h)
            var streams: [RawConnection] = []
            for _ in 0..<20 { streams.append(try await Self.openStream(port: port, channel: "session:s-shutdown")) }
            try await h.sql(#"""
                UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-shutdown'
                """#)
            for stream in streams {
                let received = try await stream.read { $0.contains("\"n\": 1") }
                #expect(received, "the update did not reach an open stream: \(stream.text)")
            }
            let lines = streams[0].text.split(whereSeparator: \.isNewline)
            let lastID = try #require(lines.last { $0.hasPrefix("id: ") }?.dropFirst(4))

            try await Self.expectCleanExit(relay, "with open streams")
            for stream in streams {
                let closed = try await stream.readUntilClosed(timeout: .seconds(2))
                #expect(closed, "a stream stayed open after the relay stopped")
                // The last chunk of the response is the comment (then the chunked body's end).
                let farewell = ": the relay is shutting down; reconnect with Last-Event-ID\n\n"
                #expect(stream.text.hasSuffix(farewell + "\r\n0\r\n\r\n"),
                        "the stream did not end with the last comment: \(stream.text.suffix(200))")
            }

            // Written while no relay runs; the client resumes on another instance from the last id it saw.
            try await h.sql(#"""
                UPDATE activity_registration SET content_state = '{"n": 2}' WHERE session_id = 's-shutdown'
                """#)
            let (next, nextPort) = try await RelayProcess.serve(h)
            defer { next.stop(signal: SIGKILL) }
            let resumed = try await Self.openStream(port: nextPort, channel: "session:s-shutdown",
                                                    headers: ["Last-Event-ID: \(lastID)"])
            let caughtUp = try await resumed.read { $0.contains("\"n\": 2") }
            #expect(caughtUp, "the resumed stream missed the update written during the restart: \(resumed.text)")
            #expect(!resumed.text.contains("\"n\": 1"), "the resumed stream repeated an event it had seen")
            try await Self.expectCleanExit(next, "after resuming")
        }
    }

    @Test("streams whose clients vanished, after 50 one-shot requests, do not hold the exit up",
          .timeLimit(.minutes(5)))
    func vanishedClients() async throws {
        try await Harness.with { h in
            let (relay, port) = try await RelayProcess.serve(h)
            for index in 0..<20 {
                let stream = try await Self.openStream(port: port, channel: "session:s-gone-\(index)")
                stream.close()
            }
            let http = RelayHTTP(port: port)
            for index in 0..<50 {
                // Each on its own connection, closed by the client after the answer.
                let connection = try RawConnection(port: port)
                let registration = #"{"secret":"s","sessionID":"s-reg-\#(index)","activityToken":"\#(randomToken())"}"#
                try connection.post("/v1/activity/register", json: registration)
                let answered = try await connection.read { $0.contains("\"ok\":true") }
                #expect(answered, "registration \(index) was not answered: \(connection.text)")
                connection.close()
            }
            #expect(try await http.request(.GET, "/health").status == 200)
            try await Self.expectCleanExit(relay, "after vanished stream clients")
        }
    }

    @Test("a request in flight is answered before the relay exits", .timeLimit(.minutes(5)))
    func inFlightRequest() async throws {
        try await Harness.with { h in
            var faults = SimulatorFaults()
            faults.delayMilliseconds = 1000
            h.simulator.setFaults(faults)
            let (relay, port) = try await RelayProcess.serve(h)
            let registered = try await RelayHTTP(port: port).post(
                "/v1/device/register", #"{"secret":"s-inflight","deviceToken":"\#(randomToken())"}"#)
            #expect(registered.status == 200)
            // /v1/event waits for APNs' answer, which the simulator holds back for a second.
            let connection = try RawConnection(port: port)
            try connection.post("/v1/event",
                                json: #"{"secret":"s-inflight","eventType":"permission","sessionID":"s-inflight"}"#)
            // Its push is claimed (the row is locked by a batch) before the signal: SIGTERM stops new claims at once.
            try await h.waitUntil("""
                SELECT EXISTS (SELECT 1 FROM delivery_outbox WHERE event_type = 'permission')
                   AND NOT EXISTS (SELECT 1 FROM delivery_outbox WHERE event_type = 'permission' FOR UPDATE SKIP LOCKED)
                """)
            try await Self.expectCleanExit(relay, "during a request")
            let answered = try await connection.read(timeout: .seconds(1)) { $0.contains("\r\n\r\n{") }
            #expect(answered && connection.text.hasPrefix("HTTP/1.1 200"),
                    "the request in flight was not answered: \(connection.text)")
            #expect(connection.text.contains("\"sent\":1"), "its push was not sent before the exit: \(connection.text)")
        }
    }
}

extension ShutdownTests {
    @Test("a batch stuck on APNs past the shutdown budget is rolled back; the exit is still clean and nothing is lost",
          .timeLimit(.minutes(5)))
    func stuckBatch() async throws {
        try await Harness.with { h in
            let token = try await h.registerActivity(session: "s-stuck")
            var faults = SimulatorFaults()
            faults.delayMilliseconds = 30_000
            h.simulator.setFaults(faults)
            let (relay, _) = try await RelayProcess.serve(h)
            try await h.sql(#"""
                UPDATE activity_registration SET content_state = '{"n": 1}' WHERE session_id = 's-stuck'
                """#)
            // The batch has claimed the row (its per-activity advisory lock is held until the batch ends) and goes
            // on to APNs, which holds the push: the batch cannot finish within the budget. (A worker between batches
            // is "idle in transaction" too, holding no lock: that is not a batch in flight.) Only this test's
            // database: the cluster is shared with tests running beside it.
            try await h.waitUntil("""
                SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                               WHERE a.datname = current_database() AND l.locktype = 'advisory')
                """)
            try await Self.expectCleanExit(relay, "with a batch stuck past the budget")
            #expect(relay.output.contains("rolled back"),
                    "the log does not say what the forced stop did: \(relay.output.suffix(600))")

            h.simulator.setFaults(SimulatorFaults())
            let (next, _) = try await RelayProcess.serve(h)
            defer { next.stop(signal: SIGKILL) }
            try await h.waitForPushes { $0.contains { $0.token == token && $0.n == 1 } }
        }
    }
}
