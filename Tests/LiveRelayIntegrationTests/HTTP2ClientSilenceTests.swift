import LiveRelayHTTP2Client
import NIOCore
import Testing

/// A connection to APNs or FCM that stops answering without closing (a network path that dropped: TCP keeps such a
/// connection for a quarter of an hour) is replaced after one batch's silence limit, or, when it falls silent while
/// idle, after its PING goes unanswered, so that deliveries resume.
@Suite("A push connection that falls silent", .timeLimit(.minutes(5)))
struct HTTP2ClientSilenceTests {
    /// A push to a new token without a provider token: the simulator answers it 403, which shows it arrived.
    static func push(to origin: HTTP2Origin) -> HTTP2Request {
        var headers = origin.headers(method: "POST", path: "/3/device/\(randomToken())")
        headers.add(name: "apns-topic", value: Harness.bundleID)
        return HTTP2Request(origin: origin, headers: headers, body: ByteBuffer(string: #"{"aps":{}}"#))
    }

    /// Runs `body` with a proxy in front of the harness's simulator, and closes the proxy however `body` ends: a
    /// frozen connection left open would hold up the simulator's graceful stop.
    static func withProxy(_ h: Harness, _ body: (FreezingProxy) async throws -> Void) async throws {
        let proxy = try await FreezingProxy(to: h.simulatorPort)
        do {
            try await body(proxy)
        } catch {
            try? await proxy.close()
            throw error
        }
        try await proxy.close()
    }

    /// `withProxy`, with a client whose origin is the proxy, shut down however `body` ends.
    static func withClient(
        _ h: Harness, limits: HTTP2Client.Limits, _ body: (FreezingProxy, HTTP2Client, HTTP2Origin) async throws -> Void
    ) async throws {
        try await withProxy(h) { proxy in
            let client = try HTTP2Client(caFile: h.caFile, limits: limits)
            do {
                try await body(proxy, client, try HTTP2Origin(url: "https://localhost:\(proxy.port)"))
            } catch {
                try? await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }

    @Test("after a batch met only silence, the next one goes on a new connection and is answered")
    func silentConnectionIsReplaced() async throws {
        // Long enough for the simulator to answer on a machine the whole suite loads (0.5 s was not, in a clean
        // clone's run), short enough that the frozen batch's wait stays short.
        let limits = HTTP2Client.Limits(silenceSeconds: 2, batchSeconds: 10)
        try await Harness.with { h in try await Self.withClient(h, limits: limits) { proxy, client, origin in
            func request() -> HTTP2Request { Self.push(to: origin) }
            // Answered (403: the request carries no provider token, which is all this needs).
            let first = await client.send([request()])
            #expect("\(first)".contains("status: 403"), "\(first)")
            #expect(proxy.accepted == 1)

            proxy.freeze()
            let silent = await client.send([request()])
            guard case .failure(.timedOut(let seconds))? = silent.first else {
                Issue.record("not timed out: \(silent)")
                return
            }
            #expect(seconds == 2)

            let after = await client.send([request()])
            #expect("\(after)".contains("status: 403"), "the batch after the silence: \(after)")
            #expect(proxy.accepted == 2, "the batch after the silence went on the silent connection")
        } }
    }

    @Test("an idle connection that falls silent is found out by its PING and closed; the next batch is answered")
    func idleSilentConnectionIsClosed() async throws {
        let limits = HTTP2Client.Limits(silenceSeconds: 30, batchSeconds: 60, idlePingSeconds: 0.3)
        try await Harness.with { h in try await Self.withClient(h, limits: limits) { proxy, client, origin in
            let request = Self.push(to: origin)
            let first = await client.send([request])
            #expect("\(first)".contains("status: 403"), "\(first)")
            // Alive while idle: its PINGs (one every 0.3 s) are answered, and it stays open.
            let closedWhileAlive = try await pollUntil(timeout: .seconds(1)) { proxy.closedByClients > 0 }
            #expect(!closedWhileAlive)

            proxy.freeze()
            let closed = try await pollUntil(timeout: .seconds(10)) { proxy.closedByClients == 1 }
            #expect(closed, "the silent connection was not closed")
            let started = ContinuousClock.now
            let after = await client.send([request])
            #expect("\(after)".contains("status: 403"), "\(after)")
            #expect(ContinuousClock.now - started < .seconds(10), "the batch waited for its silence limit")
            #expect(proxy.accepted == 2)
        } }
    }

    @Test("a relay whose APNs connection falls silent delivers the write on a new connection after one timeout")
    func relayDeliversAfterSilence() async throws {
        try await Harness.with { h in try await Self.withProxy(h) { proxy in
            // One worker: with two, a retry taken by the other worker's connection would hide the silent one.
            let environment = ["APNS_PRODUCTION_URL": "https://127.0.0.1:\(proxy.port)", "LIVERELAY_WORKERS": "1"]
            try await h.withRelay(environment: environment) {
                let token = try await h.registerActivity(session: "s-silent")
                func update(_ n: Int) async throws {
                    try await h.sql("""
                        UPDATE activity_registration SET content_state = jsonb_build_object('n', \(n))
                        WHERE session_id = 's-silent'
                        """)
                }
                try await update(1)
                try await h.waitForPushes { $0.contains { $0.token == token && $0.n == 1 } }
                // Frozen once the relay has its answer (frozen before, the answer would be lost on the way back).
                try await h.waitUntil("SELECT count(*) = 1 FROM delivery_log WHERE session_id = 's-silent'")

                proxy.freeze()
                try await update(2)
                // The request on the frozen connection gets no answer for the relay's 10 s request timeout; the
                // retry goes on a new connection.
                try await h.waitForPushes(timeout: .seconds(60)) { $0.contains { $0.token == token && $0.n == 2 } }
                #expect(proxy.accepted == 2)
                // (The outcome is recorded just after the simulator has seen the push.)
                try await h.waitUntil("SELECT count(*) = 3 FROM delivery_log WHERE session_id = 's-silent'")
                let log = try await h.rows("""
                    SELECT status || ': ' || coalesce(error, '') FROM delivery_log WHERE session_id = 's-silent'
                    ORDER BY id
                    """, as: String.self)
                #expect(log.count == 3 && log.first == "sent: " && log.last == "sent: ", "\(log)")
                #expect(log.dropFirst().first?.hasPrefix("retrying: ") == true, "\(log)")
            }
        } }
    }
}
