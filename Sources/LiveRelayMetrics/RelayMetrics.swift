import CoreMetrics
import Foundation
import LiveRelayCore
import Prometheus

/// The relay's metrics, through swift-metrics with a Prometheus registry of its own (several relays may share a
/// process).
public struct RelayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(5), .seconds(30),
        ]
        self.factory = factory
        // The release, as Prometheus exporters state theirs: which relay of a rolling upgrade runs what.
        Gauge(label: "liverelay_build_info", dimensions: [("version", LiveRelayVersion.current)], factory: factory)
            .record(1)
    }

    /// One delivery outcome with the push service's reason.
    public func recordOutcome(status: DeliveryStatus, reason: String?, transport: TransportKind?) {
        Counter(label: "liverelay_deliveries_total", dimensions: [
            ("status", status.rawValue), ("reason", reason ?? ""), ("transport", transport?.rawValue ?? ""),
        ], factory: factory).increment()
        if status == .retrying {
            Counter(label: "liverelay_retries_total", dimensions: [("transport", transport?.rawValue ?? "")],
                    factory: factory).increment()
        }
    }

    /// The priority a push went at and why (`budget`: the activity's priority-10 budget was spent).
    public func recordPriority(_ priority: Int, reason: PriorityReason) {
        Counter(label: "liverelay_push_priority_total", dimensions: [
            ("priority", "\(priority)"), ("reason", reason.rawValue),
        ], factory: factory).increment()
    }

    /// A push not sent because it was redundant (`Foreground`: its app was open and showed the change itself).
    public func recordPushAvoided(reason: String) {
        Counter(label: "liverelay_pushes_avoided_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// One webhook request's outcome, and (delivered) the time from the event's write to the receiver's answer.
    public func recordWebhook(status: DeliveryStatus, eventType: String, latencySeconds: Double?) {
        Counter(label: "liverelay_webhook_deliveries_total", dimensions: [
            ("status", status.rawValue), ("event", eventType),
        ], factory: factory).increment()
        if let latencySeconds {
            Timer(label: "liverelay_event_to_webhook_seconds", factory: factory)
                .recordNanoseconds(Int64(latencySeconds * 1_000_000_000))
        }
    }

    /// Time from the write's commit (outbox row) to the push service's answer.
    public func recordCommitToDelivery(seconds: Double, transport: TransportKind) {
        let nanoseconds = Int64(seconds * 1_000_000_000)
        let label = [("transport", transport.rawValue)]
        Timer(label: "liverelay_commit_to_delivery_seconds", dimensions: label, factory: factory)
            .recordNanoseconds(nanoseconds)
        if transport == .apns {
            // The APNs-only name of earlier releases, kept for one release for dashboards that use it.
            Timer(label: "liverelay_commit_to_apns_seconds", factory: factory).recordNanoseconds(nanoseconds)
        }
    }

    /// Values read at scrape time.
    public func setGauges(outboxes: OutboxGauges, subscribers: Int, credentialsMinted: [TransportKind: Int]) {
        Gauge(label: "liverelay_queue_depth", factory: factory).record(outboxes.deliveries)
        Gauge(label: "liverelay_queue_oldest_seconds", factory: factory).record(outboxes.oldestDeliverySeconds)
        Gauge(label: "liverelay_webhook_queue_depth", factory: factory).record(outboxes.webhookEvents)
        Gauge(label: "liverelay_webhook_queue_oldest_seconds", factory: factory)
            .record(outboxes.oldestWebhookEventSeconds)
        Gauge(label: "liverelay_sse_subscribers", factory: factory).record(subscribers)
        for (transport, count) in credentialsMinted {
            let label = [("transport", transport.rawValue)]
            Gauge(label: "liverelay_credentials_minted", dimensions: label, factory: factory).record(count)
        }
        if let apns = credentialsMinted[.apns] {
            Gauge(label: "liverelay_provider_tokens_minted", factory: factory).record(apns)
        }
    }
}
