import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore
import NIOCore

/// `GET /v1/views/{name}`: the dashboard views of `sql/030_views.sql`, with PostgREST-style `limit`, `offset`,
/// `order=col.asc|desc` and `col=op.value` filters (see `RelayStore.readView`). Admin only.
struct ViewRoutes: Sendable {
    let store: RelayStore

    func register(on router: RouterGroup<BasicRequestContext>) {
        router.get("v1/views") { _, _ in
            jsonResponse(.ok, [
                "ok": .bool(true), "views": .array(RelayStore.views.keys.sorted().map { .string($0) }),
            ])
        }
        router.get("v1/views/:name") { request, context in
            let parameters = try request.uri.queryParameters.map {
                (key: String($0.key), value: try Parameters.checked(String($0.value), named: String($0.key)))
            }
            let text = try await store.readView(context.parameters.get("name") ?? "", parameters: parameters)
            return Response(status: .ok, headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
}
