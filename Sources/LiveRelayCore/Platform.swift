/// The platform of a device or activity row (`platform` column), which picks the transport that delivers to it.
public enum Platform: String, Sendable, Hashable, CaseIterable, Codable {
    case ios, android

    /// The push service that reaches this platform.
    public var transport: TransportKind {
        switch self {
        case .ios: return .apns
        case .android: return .fcm
        }
    }
}

/// A push service the delivery engine sends through (`transport` in `delivery_log` and in metrics).
public enum TransportKind: String, Sendable, Hashable, CaseIterable, Codable {
    case apns, fcm

    /// The reason a delivery is settled with when this transport is not configured.
    public var notConfiguredReason: String {
        switch self {
        case .apns: return "APNsNotConfigured"
        case .fcm: return "FCMNotConfigured"
        }
    }
}

/// `delivery_log.transport`: a push service, the webhooks of lifecycle events, or a broadcast channel's side
/// (Apple's broadcast and channel management, or an FCM topic message).
public enum LoggedTransport: String, Sendable, Hashable, CaseIterable, Codable {
    case apns, fcm, webhook
    case apnsBroadcast = "apns-broadcast"
    case fcmTopic = "fcm-topic"
}

/// `activity_registration.status`.
public enum ActivityStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case active, ended, invalidated
}

/// `delivery_log.status`: what became of one outbox row.
public enum DeliveryStatus: String, Sendable, Hashable, CaseIterable, Codable {
    case sent, failed, coalesced, retrying
    /// Not sent, on purpose (an update while its app is open, under `LIVERELAY_FOREGROUND_PUSH=skip`).
    case skipped
}
