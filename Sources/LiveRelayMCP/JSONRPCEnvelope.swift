import Foundation
import LiveRelayCore

/// The shape of a JSON-RPC message MCP's HTTP transport accepts, checked before the SDK sees the body: one JSON
/// object with `"jsonrpc": "2.0"`, a string `method`, an `id` that is a string or a 64-bit integer when given (MCP
/// allows no other kind), and `params` that is an object when given. The SDK reads some malformed messages leniently (a
/// fractional id, string params, a wrong version); a client that sends one has a bug it should hear about.
enum JSONRPCEnvelope {
    /// JSON-RPC's error for the body (code and message), or nil when the body is a well-formed message.
    static func refusal(of body: Data) -> (code: Int, message: String)? {
        guard let text = String(data: body, encoding: .utf8), let message = try? JSONValue(parsing: text) else {
            return (-32700, "Parse error: the body is not JSON")
        }
        guard let members = message.objectValue else {
            return (-32600, "Invalid Request: a message is one JSON object")
        }
        guard members["jsonrpc"] == .string("2.0") else {
            return (-32600, "Invalid Request: jsonrpc must be \"2.0\"")
        }
        guard members["method"]?.stringValue != nil else {
            return (-32600, "Invalid Request: method must be a string")
        }
        switch members["id"] {
        case nil, .string?, .integer?: break
        // JSON Schema's integers include 2282.0; the SDK reads it as the integer it is.
        case .number(let number)? where Int64(exactly: number) != nil: break
        default: return (-32600, "Invalid Request: id must be a string or an integer of at most 64 bits")
        }
        switch members["params"] {
        case nil, .object?: break
        default: return (-32600, "Invalid Request: params must be an object")
        }
        return nil
    }

    /// The JSON-RPC error response for a refused body (its id cannot be trusted, so it is null).
    static func errorResponse(code: Int, message: String) -> Data {
        let error: JSONValue = .object([
            "jsonrpc": .string("2.0"), "id": .null,
            "error": .object(["code": .integer(Int64(code)), "message": .string(message)]),
        ])
        return Data(error.compactText.utf8)
    }
}
