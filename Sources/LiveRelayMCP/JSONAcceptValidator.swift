import MCP

/// Refuses (406) a POST whose `Accept` rules JSON out. A request with no `Accept`, or one accepting `*/*` or
/// `application/*`, accepts JSON (RFC 9110); the SDK's own validator wants `application/json` spelt out.
struct JSONAcceptValidator: HTTPRequestValidator {
    func validate(_ request: HTTPRequest, context: HTTPValidationContext) -> HTTPResponse? {
        let types = (request.header(HTTPHeaderName.accept) ?? "*/*").split(separator: ",").map {
            $0.split(separator: ";")[0].trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard types.contains(where: { ["application/json", "application/*", "*/*"].contains($0) }) else {
            return .error(statusCode: 406, .invalidRequest("Not Acceptable: Client must accept application/json"))
        }
        return nil
    }
}
