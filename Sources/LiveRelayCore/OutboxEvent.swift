/// What a claimed outbox row asks for: its `event_type`, read once with its kind. An alert's is the relay event's
/// own type (named by whoever posted it) and stays text; every other kind's comes from a closed set. A text outside
/// it (a row written by hand, or by a newer relay's SQL) is kept as `unrecognised`: a channel row with one is refused
/// as malformed, and an activity's push is built from the activity's state whatever its rows say.
public enum OutboxEvent: Sendable, Hashable {
    /// An activity's push (`update`, `end`; `start` for a push-to-start row or an Android activity's first).
    case activity(LiveActivityEvent)
    case channel(ChannelStep)
    case widgetReload
    case alert(String)
    case unrecognised(String)

    public init(kind: OutboxRow.Kind, text: String) {
        switch kind {
        case .activity, .start:
            self = LiveActivityEvent(rawValue: text).map(Self.activity) ?? .unrecognised(text)
        case .channel:
            self = ChannelStep(rawValue: text).map(Self.channel) ?? .unrecognised(text)
        case .widget:
            self = text == "reload" ? .widgetReload : .unrecognised(text)
        case .alert:
            self = .alert(text)
        }
    }

    /// The `event_type` text, as written to `delivery_outbox` and `delivery_log`.
    public var text: String {
        switch self {
        case .activity(let event): event.rawValue
        case .channel(let step): step.rawValue
        case .widgetReload: "reload"
        case .alert(let text), .unrecognised(let text): text
        }
    }

    /// The Live Activity event, for an activity's or a push-to-start's row.
    public var liveActivityEvent: LiveActivityEvent? {
        if case .activity(let event) = self { event } else { nil }
    }
}
