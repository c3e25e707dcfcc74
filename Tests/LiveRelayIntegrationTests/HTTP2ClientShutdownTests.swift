import LiveRelayHTTP2Client
import LiveRelayPostgres
import NIOPosix
import Testing

/// The relay's HTTP/2 client when the relay stops: nothing it had queued leaves afterwards, and no connection outlives
/// it. (A connection still in its TLS handshake used to be forgotten, not closed: it sent its requests once the
/// handshake ended and kept the server's graceful stop waiting on it.)
@Suite("HTTP/2 client shutdown")
struct HTTP2ClientShutdownTests {
    @Test("a request on a connection still being made fails when the client shuts down, and never reaches the server",
          .timeLimit(.minutes(5)))
    func shutdownWhileConnecting() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        try await Harness.with { h in
            let client = try HTTP2Client(
                caFile: h.caFile, limits: .init(silenceSeconds: 5, batchSeconds: 10), eventLoop: loop)
            let request = HTTP2ClientSilenceTests.push(to: try HTTP2Origin(url: "https://localhost:\(h.simulatorPort)"))
            let answers = try await EventLoopExecutor.run(on: loop) {
                // On the client's loop, in this order: the send starts its connection (the host name is resolved
                // first, so it is still being made), then the shutdown runs.
                async let results = client.send([request])
                try await client.shutdown()
                return await results
            }
            let answered = answers.filter { if case .success = $0 { true } else { false } }
            #expect(answers.count == 1 && answered.isEmpty, "answered after the shutdown: \(answered)")
            // The simulator answers every request it gets (a bad one too): one that left would show in its counts.
            #expect(h.simulator.responseCounts().isEmpty, "\(h.simulator.responseCounts())")
            let later = await client.send([request])
            #expect("\(later)".contains("the client was shut down"), "\(later)")
        }
        try await group.shutdownGracefully()
    }
}
