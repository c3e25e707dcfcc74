import Testing
import AsyncHTTPClient
import Foundation
import LiveRelayCore
import NIOCore
import NIOHTTP1

/// Small helpers to call the relay's HTTP API as its users do.
struct RelayHTTP: Sendable {
    let port: Int

    struct Reply: Sendable {
        var status: Int
        var json: JSONValue?
        var text: String
        var headers = HTTPHeaders()
        subscript(key: String) -> JSONValue? { json?.objectValue?[key] }
    }

    func request(
        _ method: HTTPMethod, _ path: String, json: String? = nil, headers: [(String, String)] = []
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let json {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(20))
        let body = try await response.body.collect(upTo: 10 * 1024 * 1024)
        let text = String(buffer: body)
        return Reply(status: Int(response.status.code), json: try? JSONValue(parsing: text), text: text,
                     headers: response.headers)
    }

    func post(_ path: String, _ json: String, headers: [(String, String)] = []) async throws -> Reply {
        try await request(.POST, path, json: json, headers: headers)
    }

    static let admin = [("Authorization", "Bearer \(Harness.adminToken)")]
}

/// A Server-Sent Events client reading `/v1/stream`.
final class SSEClient: @unchecked Sendable {
    struct Event: Sendable, Equatable {
        var id: Int64?
        var name: String
        var data: String
        var json: JSONValue? { try? JSONValue(parsing: data) }
    }

    let status: Int
    private let task: Task<Void, Never>
    private let blocks: Mutex2

    /// Opens the stream; the body is read in the background until `close()`.
    init(port: Int, query: String, headers: [(String, String)]) async throws {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/stream?\(query)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        status = Int(response.status.code)
        let blocks = Mutex2()
        task = Task { [response] in
            var pending = ""
            do {
                for try await buffer in response.body {
                    pending += String(buffer: buffer)
                    while let range = pending.range(of: "\n\n") {
                        let block = String(pending[..<range.lowerBound])
                        pending = String(pending[range.upperBound...])
                        blocks.append(block)
                    }
                }
                blocks.markEnded()
            } catch {}
        }
        self.blocks = blocks
    }

    /// Events parsed so far.
    var received: [Event] {
        blocks.all.compactMap { block in
            var event = Event(id: nil, name: "message", data: "")
            var isEvent = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix("id: ") { event.id = Int64(line.dropFirst(4)); isEvent = true }
                if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") { event.data = String(line.dropFirst(6)); isEvent = true }
            }
            return isEvent ? event : nil
        }
    }

    var commentBlocks: [String] { blocks.all.filter { $0.hasPrefix(":") } }
    /// Every block as it came, `retry:` fields and comments included.
    var rawBlocks: [String] { blocks.all }
    /// True once the relay ended the stream (not `close()`).
    var ended: Bool { blocks.ended }

    /// Waits until `condition` holds for the events received, or throws after `timeout`.
    @discardableResult
    func wait(timeout: Duration = .seconds(15), _ condition: ([Event]) -> Bool) async throws -> [Event] {
        if try await pollUntil(timeout: timeout, { condition(received) }) { return received }
        Issue.record(
            "timed out waiting for events; received \(received.map { "\($0.id ?? -1) \($0.name) \($0.data)" })")
        throw Harness.TimedOut()
    }

    func close() { task.cancel() }
    deinit { task.cancel() }
}

/// Blocks of SSE text, appended by the reader task.
final class Mutex2: @unchecked Sendable {
    private let lock = NSLock()
    private var blocks: [String] = []
    private var isEnded = false
    func append(_ block: String) { lock.withLock { blocks.append(block) } }
    func markEnded() { lock.withLock { isEnded = true } }
    var all: [String] { lock.withLock { blocks } }
    var ended: Bool { lock.withLock { isEnded } }
}
