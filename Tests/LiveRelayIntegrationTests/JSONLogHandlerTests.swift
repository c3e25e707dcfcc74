import Foundation
import LiveRelayCore
import LiveRelayServer
import Logging
import NIOConcurrencyHelpers
import Testing

/// `LOG_FORMAT=json`'s handler, fed events directly.
@Suite("JSON log lines")
struct JSONLogHandlerTests {
    @Test("one line per event: the four fields, then the metadata, which cannot replace them; below the level, none")
    func lines() throws {
        let written = NIOLockedValueBox<[String]>([])
        var logger = Logger(label: "relay.test") { label in
            JSONLogHandler(label: label) { line in written.withLockedValue { $0.append(line) } }
        }
        logger[metadataKey: "relay"] = "a"
        logger.notice("a \"quoted\"\nmessage", metadata: [
            "count": "\(3)", "tokens": .array(["…cafebabe"]), "peer": .dictionary(["port": "443"]),
            "level": "spoofed", "relay": "b",
        ])
        logger.debug("below the level")
        let lines = written.withLockedValue { $0 }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.hasSuffix("\n") && line.dropLast().firstIndex(of: "\n") == nil, "one line: \(line)")
        let object = try #require(try JSONValue(parsing: line).objectValue)
        #expect(object["level"] == .string("notice") && object["logger"] == .string("relay.test"))
        #expect(object["message"] == .string("a \"quoted\"\nmessage"))
        #expect(object["relay"] == .string("b") && object["count"] == .string("3"))
        #expect(object["tokens"] == .array([.string("…cafebabe")]))
        #expect(object["peer"] == .object(["port": .string("443")]))
        let time = try #require(object["time"]?.stringValue)
        #expect(try Date(time, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true))
                .timeIntervalSinceNow.magnitude < 60, "\(time)")
    }
}
