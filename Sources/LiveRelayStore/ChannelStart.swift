/// What `POST /v1/channels/{name}/start` queued, and each given device it could not start an activity on, with why.
public struct ChannelStart: Codable, Sendable, Equatable {
    public var queued: Int
    public var notQueued: [NotQueued]

    /// A device none of whose rows got a start.
    public struct NotQueued: Codable, Sendable, Equatable {
        public var deviceUUID: String
        public var reason: Reason
        /// The reason in words.
        public var message: String
    }

    /// Why a device got no start (as `liverelay_channel_start_misses` says it).
    public enum Reason: String, Codable, Sendable {
        /// No device row has that uuid.
        case unknownDevice
        /// Only Android rows: an Android app follows the channel's FCM topic itself.
        case notIOS
        /// No iOS row holds a push-to-start token for the channel's attributes type.
        case noPushToStartToken

        func message(attributesType: String?) -> String {
            switch self {
            case .unknownDevice: "no device is registered with this UUID"
            case .notIOS: "an Android device: its app follows the channel's FCM topic, and push-to-start is for iOS"
            case .noPushToStartToken:
                "the device has no push-to-start token for \(attributesType ?? "SessionActivityAttributes") "
                    + "(POST /v1/device/register with pushToStartTokens)"
            }
        }
    }
}
