import Foundation
import Logging
import MCP

/// MCP over Streamable HTTP (JSON responses, no sessions), in plain types so that the HTTP server's route can call
/// it without importing the SDK (whose `Server`, `Request` and `Response` clash with Hummingbird's).
///
/// Each POST gets a fresh server and transport: a stateless SDK server answers only one `initialize`, and keeps
/// replies by JSON-RPC id, which two clients may share. A tool call is short, so the cost is a few allocations.
public struct MCPHTTPEndpoint: Sendable {
    public struct Reply: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: Data?
    }

    let tools: RelayTools
    /// The longest a request waits for the server's answer. The SDK's transport waits without limit for an answer
    /// matched by the request's id; should none come (an id the transport and the server read differently was one
    /// way), the transport is closed, which ends the wait. Longer than a tool's own bound (its statements' 30 s).
    let answerLimit: Duration

    public init(tools: RelayTools, answerLimit: Duration = .seconds(45)) {
        self.tools = tools
        self.answerLimit = answerLimit
    }

    /// Answers one HTTP request to `/mcp`. The caller has checked the admin token already, so the SDK's Host/Origin
    /// check (which refuses any non-localhost Host) is left out: a browser on another site cannot send that token.
    /// A JSON body that is not a JSON-RPC message MCP allows gets 400 with JSON-RPC's error before the SDK sees it.
    public func respond(method: String, headers: [String: String], body: Data?) async -> Reply {
        let contentType = headers.first { $0.key.lowercased() == "content-type" }?.value.lowercased() ?? ""
        if method == "POST", contentType.hasPrefix("application/json"),
           let refusal = JSONRPCEnvelope.refusal(of: body ?? Data()) {
            return Reply(status: 400, headers: ["Content-Type": "application/json"],
                         body: JSONRPCEnvelope.errorResponse(code: refusal.code, message: refusal.message))
        }
        let transport = StatelessHTTPServerTransport(
            validationPipeline: StandardValidationPipeline(validators: [
                JSONAcceptValidator(), ContentTypeValidator(), ProtocolVersionValidator(),
            ]))
        let server = await tools.makeServer()
        do {
            try await server.start(transport: transport)
        } catch {
            tools.logger.error("MCP server did not start", metadata: ["error": "\(error)"])
            return Reply(status: 500, headers: [:], body: nil)
        }
        let race = SettleOnce()
        let watchdog = Task { [answerLimit] in
            do { try await Task.sleep(for: answerLimit) } catch { return }
            // An answer taken as the limit passed is sent: the limit ends only a wait that is still on.
            guard race.settle() else { return }
            await transport.disconnect()
        }
        let answer = await transport.handleRequest(
            HTTPRequest(method: method, headers: headers, body: body, path: "/mcp"))
        let answeredInTime = race.settle()
        watchdog.cancel()
        await watchdog.value
        await server.stop()
        if !answeredInTime {
            tools.logger.warning("MCP request got no answer in time", metadata: ["limit": "\(answerLimit)"])
            return Reply(status: 503, headers: ["Content-Type": "application/json"],
                         body: JSONRPCEnvelope.errorResponse(code: -32603, message: "no answer within \(answerLimit)"))
        }
        return Reply(status: answer.statusCode, headers: answer.headers, body: answer.bodyData)
    }
}
