import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayMCP
import Logging
import NIOCore

/// `POST /mcp`: the MCP tools over Streamable HTTP, on the admin group (the token is checked before the MCP
/// transport sees the request). `GET` and `DELETE` are not routes, so they answer 405 with `Allow: POST` (no
/// server-sent stream, no sessions), which MCP clients expect.
struct MCPRoutes: Sendable {
    let endpoint: MCPHTTPEndpoint

    init(tools: RelayTools, logger: Logger) {
        endpoint = MCPHTTPEndpoint(tools: tools)
    }

    func register(on router: RouterGroup<BasicRequestContext>) {
        router.post("mcp") { request, _ in try await answer(request) }
    }

    private func answer(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: RequestLimits.maximumBodyBytes)
        var headers: [String: String] = [:]
        for field in request.headers where field.name != .authorization {
            headers[field.name.canonicalName] = headers[field.name.canonicalName].map { $0 + ", " + field.value }
                ?? field.value
        }
        let reply = await endpoint.respond(
            method: request.method.rawValue, headers: headers, body: Data(buffer: body))
        var fields = HTTPFields()
        for (name, value) in reply.headers {
            if let name = HTTPField.Name(name) { fields[name] = value }
        }
        return Response(status: .init(code: reply.status), headers: fields,
                        body: .init(byteBuffer: ByteBuffer(data: reply.body ?? Data())))
    }
}
