import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /openapi.json` (the document kept in the repository) and the built-in dashboard's files (`DashboardAsset`),
/// served with a policy that lets the page load nothing but these.
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
        for asset in DashboardAsset.allCases {
            router.get(RouterPath(asset.path)) { _, _ in try file(asset) }
        }
    }

    private func file(_ asset: DashboardAsset) throws -> Response {
        guard let data = dashboard.files[asset] else {
            throw APIError.notFound("dashboard/\(asset.rawValue) was not found beside migrations/")
        }
        let headers: HTTPFields = [
            .contentType: asset.contentType, .cacheControl: "no-cache", .contentSecurityPolicy: Self.policy,
            HTTPField.Name("X-Content-Type-Options")!: "nosniff", HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}
