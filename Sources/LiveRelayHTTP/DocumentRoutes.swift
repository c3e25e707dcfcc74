import Foundation
import Hummingbird
import NIOCore

/// `GET /openapi.json` (the document kept in the repository) and `GET /`, the built-in dashboard page.
struct DocumentRoutes: Sendable {
    let openAPI: Data?

    func register(on router: Router<BasicRequestContext>) {
        router.get("openapi.json") { _, _ in
            guard let openAPI else { throw APIError.notFound("openapi.json was not found beside migrations/") }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(data: openAPI)))
        }
        router.get("/") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: DashboardPage.html)))
        }
    }
}
