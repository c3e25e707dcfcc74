import Hummingbird

/// Lets a request through only with the admin token: 401 (with `WWW-Authenticate: Bearer`) without credentials, 403
/// with another kind. Put on the route groups of the admin API, so no handler can forget it.
struct AdminOnly<Context: RequestContext>: RouterMiddleware {
    let auth: Authenticator
    /// Answer 401 with the challenge to every other caller too (a device token, a pairing secret): MCP clients take
    /// 401 as "authenticate" and 403 as a dead end, and only the admin bearer is an MCP credential.
    var challengeEveryone = false

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response {
        if challengeEveryone {
            let caller = auth.caller(for: request)
            guard caller.isAdmin else { throw APIError.unauthorized(caller) }
        } else {
            try auth.requireAdmin(request)
        }
        return try await next(request, context)
    }
}
