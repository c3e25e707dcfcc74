import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /openapi.json` (the document kept in the repository) and the built-in dashboard: `GET /`, `/dashboard.js`,
/// `/dashboard.css`, served with a policy that lets the page load nothing but these.
struct DocumentRoutes: Sendable {
    let openAPI: Data?
    let dashboard: DashboardFiles

    static let policy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        + "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    func register(on router: Router<BasicRequestContext>) {
        router.get("openapi.json") { _, _ in
            guard let openAPI else { throw APIError.notFound("openapi.json was not found beside migrations/") }
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(data: openAPI)))
        }
        router.get("/") { _, _ in try file(dashboard.page, "index.html", type: "text/html; charset=utf-8") }
        router.get("dashboard.js") { _, _ in
            try file(dashboard.script, "dashboard.js", type: "text/javascript; charset=utf-8")
        }
        router.get("dashboard.css") { _, _ in
            try file(dashboard.style, "dashboard.css", type: "text/css; charset=utf-8")
        }
    }

    private func file(_ data: Data?, _ name: String, type: String) throws -> Response {
        guard let data else { throw APIError.notFound("dashboard/\(name) was not found beside migrations/") }
        let headers: HTTPFields = [
            .contentType: type, .cacheControl: "no-cache", .contentSecurityPolicy: Self.policy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}
