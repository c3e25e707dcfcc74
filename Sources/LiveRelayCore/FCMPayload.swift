/// Builds the parts of FCM HTTP v1 messages the relay sends (README "Android (FCM HTTP v1)").
///
/// The data keys match `liverelay_fcm_data` in `sql/010_payload.sql`, which checks the size when a row is written.
public enum FCMPayload {
    /// The most bytes FCM accepts in a message's data (keys and values).
    public static let maximumDataSize = 4096

    /// The data of a Live Activity message: every value a string, as FCM requires.
    public static func liveActivityData(
        activityID: String, event: LiveActivityEvent, timestamp: Int64, contentState: JSONValue, sessionID: String?,
        staleDate: Int64? = nil, dismissalDate: Int64? = nil
    ) -> [String: JSONValue] {
        var data: [String: JSONValue] = [
            "liveRelayActivityId": .string(activityID),
            "liveRelayEvent": .string(event.rawValue),
            "liveRelayContentState": .string(contentState.compactText),
            "liveRelayTimestamp": .string(String(timestamp)),
        ]
        if let sessionID { data["liveRelaySessionId"] = .string(sessionID) }
        if let staleDate { data["liveRelayStaleDate"] = .string(String(staleDate)) }
        if let dismissalDate, event == .end { data["liveRelayDismissalDate"] = .string(String(dismissalDate)) }
        return data
    }

    /// The data of a channel's topic message (the same keys as `liverelay_channel_fcm_data`, which checks the size).
    public static func channelData(name: String, content: LiveActivityContent, timestamp: Int64)
        -> [String: JSONValue] {
        var data: [String: JSONValue] = [
            "liveRelayChannel": .string(name),
            "liveRelayEvent": .string(content.event.rawValue),
            "liveRelayContentState": .string(content.contentState.compactText),
            "liveRelayTimestamp": .string(String(timestamp)),
        ]
        if let staleDate = content.staleDate { data["liveRelayStaleDate"] = .string(String(staleDate)) }
        if let dismissalDate = content.dismissalDate, content.event == .end {
            data["liveRelayDismissalDate"] = .string(String(dismissalDate))
        }
        return data
    }

    /// An alert of the relay routes for an Android device: a `notification` the system shows, and the event as data.
    /// Stored as the outbox row's payload; the transport adds the token and the Android options.
    public static func alert(title: String, body: String, data: [String: String]) -> JSONValue {
        .object([
            "notification": .object(["title": .string(title), "body": .string(body)]),
            "data": .object(data.mapValues { .string($0) }),
        ])
    }
}
