import CoreMetrics
import Foundation
import Prometheus

/// The relay's metrics, through swift-metrics with a Prometheus registry of its own (several relays may share a process).
public struct RelayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
        ]
        self.factory = factory
    }

    /// One delivery outcome (`sent`, `failed`, `coalesced`, `retrying`) with APNs' reason.
    public func recordOutcome(status: String, reason: String?) {
        Counter(label: "liverelay_deliveries_total", dimensions: [("status", status), ("reason", reason ?? "")], factory: factory).increment()
        if status == "retrying" {
            Counter(label: "liverelay_retries_total", factory: factory).increment()
        }
    }

    /// Time from the write's commit (outbox row) to APNs' answer.
    public func recordCommitToAPNs(seconds: Double) {
        Timer(label: "liverelay_commit_to_apns_seconds", factory: factory).recordNanoseconds(Int64(seconds * 1_000_000_000))
    }

    /// Values read at scrape time.
    public func setGauges(queueDepth: Int, subscribers: Int, providerTokens: Int) {
        Gauge(label: "liverelay_queue_depth", factory: factory).record(queueDepth)
        Gauge(label: "liverelay_sse_subscribers", factory: factory).record(subscribers)
        Gauge(label: "liverelay_provider_tokens_minted", factory: factory).record(providerTokens)
    }
}
