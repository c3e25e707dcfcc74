import Foundation
import Testing
import LiveRelayHTTPServer

/// The relay's HTTP service answers as Hummingbird's application did: Date and Server headers on every answer, and
/// requests read whole however small a connection's first receive buffer.
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
}
