import Foundation
import LiveRelayCore

/// The body of one `messages:send` request for a delivery.
enum FCMMessage {
    /// `{"message": {token, data, android: {priority, ttl, collapse_key}}}`; alerts add their `notification`.
    static func body(for delivery: Delivery, now: Int64) -> JSONValue {
        var message: [String: JSONValue] = ["token": .string(delivery.token)]
        var android: [String: JSONValue] = [
            // An update whose app is open goes at normal priority (LIVERELAY_FOREGROUND_PUSH=downgrade).
            "priority": .string(delivery.priorityReason == .foreground ? "normal" : "high"),
            "ttl": .string("\(max(0, delivery.expiration - now))s"),
        ]
        switch delivery.content {
        case .liveActivity(let content):
            let activityID = (delivery.activityID?.uuidString ?? "").lowercased()
            message["data"] = .object(FCMPayload.liveActivityData(
                activityID: activityID, event: content.event, timestamp: delivery.timestamp,
                contentState: content.contentState, sessionID: delivery.sessionID, staleDate: content.staleDate,
                dismissalDate: content.dismissalDate))
            // A newer state replaces an older one still waiting on FCM for a phone that is offline.
            android["collapse_key"] = .string(activityID)
        case .prepared(let prepared):
            for (key, value) in prepared.objectValue ?? [:] where key == "notification" || key == "data" {
                message[key] = value
            }
        case .channel(let channel):
            // One message to the channel's topic: every subscribed app gets it.
            message["token"] = nil
            message["topic"] = .string(channel.fcmTopic)
            message["data"] = .object(FCMPayload.channelData(
                name: channel.name, content: channel.state, timestamp: delivery.timestamp))
            // Storage policy 0 (`expiration` 0): "now or never" at Google too (`ttl` 0s), as at Apple.
            android["collapse_key"] = .string(channel.name)
        }
        message["android"] = .object(android)
        return .object(["message": .object(message)])
    }

    /// `push_type` in the log.
    static func pushType(of delivery: Delivery) -> PushKind {
        if case .prepared(let prepared) = delivery.content, prepared.objectValue?["notification"] != nil {
            return .notification
        }
        return .data
    }
}
