import Hummingbird

/// What APNs answers a request that no route of its API takes: 404 with `{"reason": "BadPath"}` (Apple's "the
/// request contained an invalid :path value"), not an empty 404, so a relay that built a wrong path, or sent a token
/// that changes it, records Apple's reason.
struct BadPathMiddleware<Context: RequestContext>: RouterMiddleware {
    let simulator: APNsSimulator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            // The path may hold a device token: only the method is printed.
            return simulator.answer(
                .init(status: 404, reason: "BadPath", detail: "no such path"), subject: "\(request.method)")
        }
    }
}
