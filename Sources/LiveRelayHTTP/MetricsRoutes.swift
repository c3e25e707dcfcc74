import Foundation
import Hummingbird
import LiveRelayDelivery
import LiveRelayStream
import LiveRelayAPNs
import NIOCore

/// `GET /metrics`: Prometheus text. Queue depth, SSE subscribers and provider tokens are read at scrape time.
struct MetricsRoutes: Sendable {
    let metrics: RelayMetrics
    let database: RouteDatabase
    let hub: BroadcastHub
    let tokens: ProviderTokenSource

    func register(on router: Router<BasicRequestContext>) {
        router.get("metrics") { _, _ in
            let depth = (try? await database.rows("SELECT count(*)::int8 FROM delivery_outbox", as: Int64.self).first) ?? nil
            metrics.setGauges(queueDepth: Int(depth ?? -1), subscribers: hub.subscriberCount, providerTokens: tokens.mintCount)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
        }
    }
}
