import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayMetrics
import LiveRelayStore
import LiveRelayStream
import NIOCore

/// `GET /metrics`: Prometheus text. The outboxes, SSE subscribers and credentials minted are read at scrape time
/// (the outboxes' gauges are -1 when the database cannot be read).
struct MetricsRoutes: Sendable {
    let metrics: RelayMetrics
    let store: RelayStore
    let hub: BroadcastHub
    /// How many provider tokens (APNs) or access tokens (FCM) each configured transport has minted.
    let credentialsMinted: @Sendable () -> [TransportKind: Int]

    func register(on router: Router<BasicRequestContext>) {
        router.get("metrics") { _, _ in
            let outboxes = (try? await store.outboxGauges()) ?? .unreadable
            metrics.setGauges(
                outboxes: outboxes, subscribers: hub.subscriberCount, credentialsMinted: credentialsMinted())
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: metrics.registry.emitToBuffer())))
        }
    }
}
