/// Tunables of the delivery workers.
public struct DeliveryConfiguration: Sendable {
    public var workers: Int = 2
    public var batchSize: Int = 500
    public var pollIntervalMilliseconds: Int = 500
    public var retry: RetryPolicy = .init()
    /// `LIVERELAY_PRIORITY10_PER_HOUR`: an activity's priority-10 budget (see `UpdateBudget`).
    public var priority10PerHour = UpdateBudget.defaultPerHour
    /// `LIVERELAY_ACTIVITY_MAX_AGE`: an active activity older than this (since its last start) is ended.
    public var activityMaxAgeSeconds: Double = 8 * 3600
    /// `LIVERELAY_WEBHOOK_ALLOW_PRIVATE`: webhooks may reach loopback, private and link-local addresses.
    public var allowPrivateWebhooks = false
    /// `LIVERELAY_FOREGROUND_PUSH`: what an update push does while its app is open.
    public var foregroundPolicy = ForegroundPolicy.downgrade
    /// `LIVERELAY_WIDGET_MIN_INTERVAL`: the least time between two reloads of one widget token.
    public var widgetMinIntervalSeconds: Double = 60
    /// `LIVERELAY_DELIVERY_LOG_RETENTION`: how long `delivery_log` keeps a row; nil keeps every row.
    public var deliveryLogRetentionSeconds: Double? = 30 * 86_400
    /// `LIVERELAY_WAKEUP`: what wakes the relay when a writer commits.
    public var wakeup = WakeupSource.auto
    /// How long after PostgreSQL refused the write-ahead log (a role without REPLICATION, `max_wal_senders = 0`, …)
    /// the relay asks again, so an operator's fix takes effect without a restart. Not an environment setting.
    public var walRecheckSeconds: Double = 300
    public init() {}
}

extension DeliveryConfiguration {
    /// The delivery settings, each refusal kept by `reader`.
    static func fromEnvironment(_ reader: inout EnvironmentReader) -> DeliveryConfiguration {
        var delivery = DeliveryConfiguration()
        delivery.workers = reader.keep(delivery.workers) { reader throws(ConfigurationError) in
            try reader.integer("LIVERELAY_WORKERS", default: 2, range: 1...64)
        }
        delivery.batchSize = reader.keep(delivery.batchSize) { reader throws(ConfigurationError) in
            try reader.integer("LIVERELAY_BATCH_SIZE", default: 500, range: 1...10_000)
        }
        delivery.pollIntervalMilliseconds = reader.keep(delivery.pollIntervalMilliseconds) {
            reader throws(ConfigurationError) in
            try reader.integer("LIVERELAY_POLL_INTERVAL_MS", default: 500, range: 10...60_000)
        }
        delivery.retry.maximumDelaySeconds = reader.keep(delivery.retry.maximumDelaySeconds) {
            reader throws(ConfigurationError) in
            Double(try reader.integer("LIVERELAY_RETRY_MAX_DELAY_MS", default: 60_000, range: 100...3_600_000)) / 1000
        }
        delivery.retry.maximumAttempts = reader.keep(delivery.retry.maximumAttempts) {
            reader throws(ConfigurationError) in
            try reader.integer("LIVERELAY_RETRY_MAX_ATTEMPTS", default: 12, range: 1...100)
        }
        delivery.priority10PerHour = reader.keep(delivery.priority10PerHour) { reader throws(ConfigurationError) in
            try reader.integer("LIVERELAY_PRIORITY10_PER_HOUR", default: UpdateBudget.defaultPerHour, range: 0...3600)
        }
        delivery.activityMaxAgeSeconds = reader.keep(delivery.activityMaxAgeSeconds) {
            reader throws(ConfigurationError) in
            try reader.duration("LIVERELAY_ACTIVITY_MAX_AGE", default: 8 * 3600, range: 1...(7 * 86_400))
        }
        delivery.allowPrivateWebhooks = reader.keep(false) { reader throws(ConfigurationError) in
            try reader.boolean("LIVERELAY_WEBHOOK_ALLOW_PRIVATE")
        }
        delivery.foregroundPolicy = reader.keep(delivery.foregroundPolicy) { reader throws(ConfigurationError) in
            try reader.choice("LIVERELAY_FOREGROUND_PUSH", default: ForegroundPolicy.downgrade)
        }
        delivery.widgetMinIntervalSeconds = reader.keep(delivery.widgetMinIntervalSeconds) {
            reader throws(ConfigurationError) in
            try reader.duration("LIVERELAY_WIDGET_MIN_INTERVAL", default: 60, range: 0...86_400)
        }
        delivery.deliveryLogRetentionSeconds = reader.keep(delivery.deliveryLogRetentionSeconds) {
            reader throws(ConfigurationError) in
            try reader.retention(
                "LIVERELAY_DELIVERY_LOG_RETENTION", default: 30 * 86_400, range: 3600...(3650 * 86_400))
        }
        delivery.wakeup = reader.keep(delivery.wakeup) { reader throws(ConfigurationError) in
            try reader.choice("LIVERELAY_WAKEUP", default: WakeupSource.auto)
        }
        return delivery
    }
}
