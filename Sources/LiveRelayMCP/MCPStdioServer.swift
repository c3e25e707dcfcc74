import Foundation
import Logging
import MCP

/// The tools over standard input and output, for a local agent (`liverelay mcp`). Logs go to standard error only:
/// standard output carries nothing but JSON-RPC.
public struct MCPStdioServer: Sendable {
    let tools: RelayTools

    public init(tools: RelayTools) {
        self.tools = tools
    }

    /// Serves until standard input closes, then waits (up to `drainTimeout`) until every request read has been
    /// answered: an agent that writes a request and closes its end at once still gets the reply.
    public func run(drainTimeout: Duration = .seconds(30)) async throws {
        let transport = CountingTransport(wrapping: StdioTransport())
        let server = await tools.makeServer()
        try await server.start(transport: transport)
        await server.waitUntilCompleted()
        await transport.waitUntilAnswered(timeout: drainTimeout)
        await server.stop()
    }
}

/// A transport that counts the requests it hands to the server and the responses the server sends back, so that the
/// process can wait for the last reply before it exits.
actor CountingTransport: Transport {
    private let inner: any Transport
    private var requests = 0
    private var responses = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []
    /// Set once the wait is over (answered or timed out): a waiter that arrives later returns at once.
    private var released = false

    nonisolated let logger: Logger

    init(wrapping inner: StdioTransport) {
        self.inner = inner
        self.logger = inner.logger
    }

    func connect() async throws { try await inner.connect() }

    func disconnect() async { await inner.disconnect() }

    func send(_ data: Data) async throws {
        try await inner.send(data)
        if Self.kind(of: data) == .response {
            responses += 1
            if responses >= requests {
                waiters.forEach { $0.resume() }
                waiters.removeAll()
            }
        }
    }

    func receive() -> AsyncThrowingStream<Data, Swift.Error> {
        let upstream = inner
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await data in await upstream.receive() {
                        if Self.kind(of: data) == .request { self.countRequest() }
                        continuation.yield(data)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func countRequest() { requests += 1 }

    /// Returns once every request read so far has its response, or after `timeout`.
    func waitUntilAnswered(timeout: Duration) async {
        guard responses < requests else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await withCheckedContinuation { continuation in Task { await self.park(continuation) } } }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            self.releaseAll()
        }
    }

    private func park(_ continuation: CheckedContinuation<Void, Never>) {
        if released || responses >= requests { continuation.resume() } else { waiters.append(continuation) }
    }

    private func releaseAll() {
        released = true
        waiters.forEach { $0.resume() }
        waiters.removeAll()
    }

    enum Kind { case request, response, other }

    /// A JSON-RPC request has `method` and `id`; a response has `id` and `result` or `error`.
    static func kind(of data: Data) -> Kind {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], object["id"] != nil else {
            return .other
        }
        if object["method"] != nil { return .request }
        return object["result"] != nil || object["error"] != nil ? .response : .other
    }
}
