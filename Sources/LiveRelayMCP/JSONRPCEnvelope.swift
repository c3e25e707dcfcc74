import Foundation
import LiveRelayCore

/// The shape of a JSON-RPC message MCP's HTTP transport accepts, checked before the SDK sees the body: one JSON
/// object with `"jsonrpc": "2.0"`, a string `method`, an `id` that is a string or a 64-bit integer when given (MCP
/// allows no other kind), and `params` that is an object when given. The SDK reads some malformed messages leniently (a
/// fractional id, string params, a wrong version); a client that sends one has a bug it should hear about.
enum JSONRPCEnvelope {
    /// JSON-RPC's error for the body (code and message), or nil when the body is a well-formed message.
    static func refusal(of body: Data) -> (code: Int, message: String)? {
        guard let text = String(data: body, encoding: .utf8) else {
            return (-32700, "Parse error: the body is not UTF-8 text")
        }
        guard !text.isEmpty else { return (-32700, "Parse error: the body is not JSON (it is empty)") }
        let message: JSONValue
        do {
            message = try JSONValue(parsing: text)
        } catch {
            let problem = (error as? DecodingError)?.jsonSyntaxProblem.map { ": " + $0 } ?? ""
            return (-32700, "Parse error: the body is not JSON" + problem)
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
        // JSON Schema's integers include 2282.0; the SDK reads it as the integer it is. Only where a double is exact
        // (below 2^53): a number out of Int64's range reads as a double that can round into it (-9223372036854775809
        // became Int64.min), and the SDK, unable to read that id, never answered.
        case .number(let number)? where abs(number) < 0x1p53 && number == number.rounded(): break
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
