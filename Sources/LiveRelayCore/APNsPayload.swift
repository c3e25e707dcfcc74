/// Builds APNs payloads exactly as Apple documents them for Live Activities and alerts.
///
/// The keys match `liverelay_activity_payload` in `sql/010_payload.sql`, which checks the size when a row is written.
public enum APNsPayload {
    /// The most bytes APNs accepts in a payload (non-VoIP).
    public static let maximumSize = 4096

    /// The `aps` dictionary of a Live Activity `update` or `end` push.
    public static func liveActivity(
        event: LiveActivityEvent,
        timestamp: Int64,
        contentState: JSONValue,
        staleDate: Int64? = nil,
        dismissalDate: Int64? = nil,
        relevanceScore: Double? = nil,
        alert: JSONValue? = nil
    ) -> JSONValue {
        var aps: [String: JSONValue] = [
            "timestamp": .integer(timestamp),
            "event": .string(event.rawValue),
            "content-state": contentState,
        ]
        if let staleDate { aps["stale-date"] = .integer(staleDate) }
        if let dismissalDate, event == .end { aps["dismissal-date"] = .integer(dismissalDate) }
        if let relevanceScore { aps["relevance-score"] = .number(relevanceScore) }
        if let alert { aps["alert"] = alert }
        return .object(["aps": .object(aps)])
    }

    /// A push-to-start payload: `event: start` with the attributes the app's widget is declared with, and iOS 18's
    /// `input-push-token: 1`, which makes the system hand the new activity's update token to the app.
    public static func pushToStart(
        timestamp: Int64,
        attributesType: String,
        attributes: JSONValue,
        contentState: JSONValue,
        alert: JSONValue
    ) -> JSONValue {
        .object(["aps": .object([
            "timestamp": .integer(timestamp),
            "event": .string(LiveActivityEvent.start.rawValue),
            "content-state": contentState,
            "attributes-type": .string(attributesType),
            "attributes": attributes,
            "alert": alert,
            "input-push-token": .integer(1),
        ])])
    }

    /// The sound of alert pushes: the OpenCode app ships `alert.wav` (iOS plays the default sound when an app
    /// lacks it).
    public static let alertSound = "alert.wav"

    /// A WidgetKit reload (`apns-push-type: widgets`): the widget's timeline provider fetches what changed itself.
    public static let widgetReload: JSONValue = .object(["aps": .object(["content-changed": .bool(true)])])

    /// A user-visible alert push; `data` keys sit beside `aps` (as the original OpenCode relay sends them).
    public static func alert(title: String, body: String, data: [String: JSONValue] = [:]) -> JSONValue {
        var root = data
        root["aps"] = .object([
            "alert": .object(["title": .string(title), "body": .string(body)]),
            "sound": .string(alertSound),
        ])
        return .object(root)
    }

    /// Returns the payload with `aps.timestamp` replaced (used when the send time is known).
    public static func settingTimestamp(_ timestamp: Int64, in payload: JSONValue) -> JSONValue {
        guard case .object(var root) = payload, case .object(var aps)? = root["aps"] else { return payload }
        aps["timestamp"] = .integer(timestamp)
        root["aps"] = .object(aps)
        return .object(root)
    }

    /// Adds the device's message to a content-state as `note` (`null` when the message is empty).
    public static func mergingNote(_ message: String?, into contentState: JSONValue?) -> JSONValue {
        var members = contentState?.objectValue ?? [:]
        if let message {
            members["note"] = message.isEmpty ? .null : .string(message)
        }
        return .object(members)
    }
}

/// The `aps.event` of a Live Activity push.
public enum LiveActivityEvent: String, Sendable, Hashable {
    case update, end, start
}
