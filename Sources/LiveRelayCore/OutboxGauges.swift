/// What waits in the two outboxes, read at each `/metrics` scrape: how many rows, and how long the oldest has
/// waited. The age is what to alert on: a queue that drains keeps it near zero whatever its depth, and a push service
/// or webhook receiver that is down makes it grow.
public struct OutboxGauges: Sendable, Equatable {
    /// `delivery_outbox`: pushes (activities, alerts, starts, channels, widget reloads) not yet settled.
    public var deliveries: Int
    public var oldestDeliverySeconds: Double
    /// `webhook_outbox`: lifecycle events not yet accepted by their endpoint.
    public var webhookEvents: Int
    public var oldestWebhookEventSeconds: Double

    public init(deliveries: Int, oldestDeliverySeconds: Double, webhookEvents: Int, oldestWebhookEventSeconds: Double) {
        self.deliveries = deliveries
        self.oldestDeliverySeconds = oldestDeliverySeconds
        self.webhookEvents = webhookEvents
        self.oldestWebhookEventSeconds = oldestWebhookEventSeconds
    }

    /// Every gauge at -1: the database could not be read at this scrape.
    public static let unreadable = OutboxGauges(
        deliveries: -1, oldestDeliverySeconds: -1, webhookEvents: -1, oldestWebhookEventSeconds: -1)
}
