/// A lifecycle event of an activity (README "Activity lifecycle"): a webhook's `type` and the admin stream's
/// event name.
public enum LifecycleEvent: String, Sendable, Hashable, CaseIterable, Codable {
    case started = "live_activity.started"
    case updated = "live_activity.updated"
    case ended = "live_activity.ended"
    case invalidated = "live_activity.invalidated"
    case failed = "live_activity.failed"
    case stale = "live_activity.stale"

    /// The event a push's final outcome means, if any. A dead token is `invalidated`, which the status change emits
    /// (whoever makes it), so the outcome itself emits nothing then; nor do retries, nor alerts (no activity).
    public static func forOutcome(kind: OutboxRow.Kind, event: LiveActivityEvent?, status: DeliveryStatus,
                                  deadToken: Bool) -> LifecycleEvent? {
        guard kind != .alert, kind != .widget else { return nil }
        switch status {
        case .sent:
            if kind == .start { return .started }
            return event == .end ? .ended : .updated
        case .failed:
            return deadToken ? nil : .failed
        case .coalesced, .retrying, .skipped:
            return nil
        }
    }
}

/// Why a push went at the priority it did (`delivery_log.priority_reason`).
public enum PriorityReason: String, Sendable, Hashable, CaseIterable, Codable {
    /// The activity's (or the write's) own priority.
    case requested
    /// An `end` always goes at 10.
    case end
    /// An update that carries an alert goes at 10.
    case alert
    /// A push-to-start (or an Android `start`) goes at 10.
    case start
    /// The activity spent its priority-10 budget for the hour: the update went at 5.
    case budget
    /// The activity's app was open (a stream of its device or session): the update went at 5.
    case foreground
}
