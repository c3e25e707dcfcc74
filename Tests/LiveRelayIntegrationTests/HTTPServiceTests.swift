import Foundation
import Hummingbird
import LiveRelayHTTPServer
import Logging
import Testing

/// The relay's HTTP service answers as Hummingbird's application did: Date and Server headers on every answer,
/// requests read whole however small a connection's first receive buffer, and a stream's events as well-formed chunks
/// (the relay frames them itself).
@Suite("HTTP service")
struct HTTPServiceTests {
    @Test("Date is an RFC 9110 IMF-fixdate in GMT")
    func dateFormat() {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
    }

    @Test("every answer carries Date and Server, errors included")
    func headers() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                for path in ["/health", "/no-such-route"] {
                    let connection = try RawConnection(port: port)
                    try connection.get(path)
                    let answered = try await connection.read { $0.contains("\r\n\r\n{") && $0.hasSuffix("}") }
                    #expect(answered, "\(path): \(connection.text)")
                    let head = connection.text.lowercased()
                    #expect(head.contains("\r\nserver: liverelay\r\n"), "\(path): \(connection.text)")
                    let lines = connection.text.split(separator: "\r\n")
                    let date = try #require(lines.first { $0.lowercased().hasPrefix("date: ") })
                    let example = "Date: Sun, 06 Nov 1994 08:49:37 GMT"
                    #expect(date.hasSuffix(" GMT") && date.count == example.count, "\(date)")
                }
            }
        }
    }

    @Test("requests many times a connection's first 512-byte read are read whole: a stream's head, a POST's body")
    func largeRequests() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                // A browser's cookies can make a head kilobytes long.
                let cookie = "Cookie: session=" + String(repeating: "c", count: 3000)
                let stream = try RawConnection(port: port)
                let admin = "Authorization: Bearer \(Harness.adminToken)"
                try stream.get("/v1/stream?channel=session:ses_big", headers: [admin, cookie])
                #expect(try await stream.read { $0.contains(": connected") }, "\(stream.text)")

                let title = String(repeating: "t", count: 1000), body = String(repeating: "b", count: 2000)
                let post = try RawConnection(port: port)
                let event = #"{"secret":"s","eventType":"complete","sessionID":"x","#
                    + #""title":"\#(title)","body":"\#(body)"}"#
                try post.post("/v1/event", json: event)
                #expect(try await post.read { $0.contains(#""ok":true"#) }, "\(post.text)")
            }
        }
    }

    @Test("a request must arrive whole within the idle timeout: a body sent a byte at a time is cut off")
    func slowBodyIsCutOff() async throws {
        let router = Router(context: BasicRequestContext.self)
        router.post("echo") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1024)
            return Response(status: .ok, body: .init(byteBuffer: body))
        }
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        let service = try HTTPService(
            router: router, http1: .init(idleTimeout: .seconds(1)), detachedPaths: [],
            address: .hostname("127.0.0.1", port: 0), serverName: "deadline", logger: Logger(label: "deadline")
        ) { channel in
            sink.yield(channel.localAddress?.port ?? 0)
            sink.finish()
        }
        try await withGracefulService(service, logger: Logger(label: "deadline")) { () async throws -> Void in
            var port = 0
            for await value in ports { port = value }
            try await Self.checkDeadline(port: port)
        }
    }

    /// A whole request is answered; one that trickles in is cut off at the deadline (1 s here).
    static func checkDeadline(port: Int) async throws {
        // A whole request on a kept-alive connection, twice: answered each time.
        let whole = try RawConnection(port: port)
        for text in ["first", "second"] {
            try whole.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: \(text.count)\r\n\r\n\(text)")
            let answered = try await whole.read { $0.hasSuffix(text) }
            #expect(answered, "\(whole.text)")
            try await Task.sleep(for: .milliseconds(600))  // idle between requests does not count
        }
        // A byte every 300 ms never leaves the connection idle for its second: only the deadline ends it.
        let slow = try RawConnection(port: port)
        try slow.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n")
        let started = ContinuousClock.now
        var closed = false
        for _ in 0..<20 {
            _ = try await slow.read(timeout: .milliseconds(1)) { _ in false }
            closed = slow.isClosedByServer
            if closed { break }
            try slow.send("x")  // at most one write lands after the close, before the read that sees it
            try await Task.sleep(for: .milliseconds(300))
        }
        let elapsed = ContinuousClock.now - started
        #expect(closed, "a request trickling in for 6 s was still open")
        #expect(elapsed < .seconds(3), "closed only after \(elapsed)")
    }

    @Test("a stream's body is chunked on the wire: each event one chunk whose size line counts its bytes")
    func streamChunks() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let device = UUID()
                let stream = try RawConnection(port: port)
                let admin = "Authorization: Bearer \(Harness.adminToken)"
                try stream.get("/v1/stream?channel=device:\(device)", headers: [admin])
                #expect(try await stream.read { $0.contains(": connected") }, "\(stream.text)")
                try await h.sql("""
                    INSERT INTO device_live_activity_message (device_uuid, message) VALUES (\(device), 'chunked')
                    """)
                #expect(try await stream.read { $0.contains("\"chunked\"") && $0.hasSuffix("\n\n\r\n") },
                        "\(stream.text)")
                let parts = stream.text.components(separatedBy: "\r\n\r\n")
                let head = parts[0].lowercased()
                #expect(head.contains("\r\ntransfer-encoding: chunked"), "\(head)")
                let chunks = try Self.chunks(of: parts.dropFirst().joined(separator: "\r\n\r\n"))
                #expect(chunks.first == "retry: 2000\n: connected\n\n", "\(chunks)")
                let event = try #require(chunks.first { $0.contains("live-activity-message") })
                #expect(event.hasPrefix("id: ") && event.contains("\nevent: live-activity-message\ndata: {"),
                        "\(event)")
            }
        }
    }

    /// The chunks of a chunked body (RFC 9112 §7.1) read so far, as text; throws at a size line that does not parse
    /// or a chunk whose bytes do not end with CRLF where its size says.
    static func chunks(of body: String) throws -> [String] {
        struct Malformed: Error { var at: String }
        let bytes = Array(body.utf8), crlf: [UInt8] = [13, 10]
        var chunks: [String] = [], at = 0
        while at < bytes.count {
            let malformed = Malformed(at: String(decoding: bytes[at...].prefix(40), as: UTF8.self))
            guard let lineEnd = (at..<bytes.count - 1).first(where: { Array(bytes[$0...$0 + 1]) == crlf }),
                  let size = Int(String(decoding: bytes[at..<lineEnd], as: UTF8.self), radix: 16) else {
                throw malformed
            }
            let start = lineEnd + 2, end = start + size
            guard end + 2 <= bytes.count, Array(bytes[end..<end + 2]) == crlf else { throw malformed }
            chunks.append(String(decoding: bytes[start..<end], as: UTF8.self))
            at = end + 2
        }
        return chunks
    }
}
