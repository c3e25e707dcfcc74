import Hummingbird

/// Lets a request through only with the admin token: 401 (with `WWW-Authenticate: Bearer`) without credentials, 403
/// with another kind. Put on the route groups of the admin API, so no handler can forget it.
struct AdminOnly<Context: RequestContext>: RouterMiddleware {
    let auth: Authenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response {
        try auth.requireAdmin(request)
        return try await next(request, context)
    }
}
