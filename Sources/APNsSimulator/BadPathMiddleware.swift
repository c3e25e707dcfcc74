import Foundation
import Hummingbird
import LiveRelayCore
import NIOCore

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
            simulator.state.withLock { $0.responses["404", default: 0] += 1 }
            if simulator.printPushes {
                // The path may hold a device token: only the method is printed.
                FileHandle.standardOutput.write(Data("apns-sim: 404 BadPath (\(request.method), no such path)\n".utf8))
            }
            let body = JSONValue.object(["reason": .string("BadPath")]).compactBytes
            return Response(status: .notFound, headers: [.contentType: "application/json; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
    }
}
