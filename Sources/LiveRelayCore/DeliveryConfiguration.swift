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
    public init() {}
}
