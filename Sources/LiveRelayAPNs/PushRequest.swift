import Foundation
import LiveRelayCore

/// The `apns-push-type` header.
public enum PushType: String, Sendable, Hashable {
    case liveactivity, alert, widgets

    /// As the delivery log records it.
    public var kind: PushKind {
        switch self {
        case .liveactivity: .liveactivity
        case .alert: .alert
        case .widgets: .widgets
        }
    }
}

/// One request to APNs' provider API.
public struct PushRequest: Sendable, Hashable {
    public var deviceToken: String
    public var environment: APNsEnvironment
    /// The app's bundle ID; the `apns-topic` adds `.push-type.liveactivity` for Live Activities and
    /// `.push-type.widgets` for widget reloads.
    public var bundleID: String
    public var pushType: PushType
    public var priority: Int
    /// `apns-expiration` in epoch seconds (0: deliver now or never).
    public var expiration: Int64?
    /// The `apns-id`: the same across retries of one delivery.
    public var apnsID: UUID
    public var payload: [UInt8]

    public init(
        deviceToken: String, environment: APNsEnvironment, bundleID: String, pushType: PushType,
        priority: Int, expiration: Int64?, apnsID: UUID, payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.apnsID = apnsID
        self.payload = payload
    }

    /// The `apns-topic` header.
    public var topic: String {
        switch pushType {
        case .liveactivity: "\(bundleID).push-type.liveactivity"
        case .widgets: "\(bundleID).push-type.widgets"
        case .alert: bundleID
        }
    }
}

/// What APNs answered.
public struct APNsResponse: Sendable, Hashable {
    public var status: Int
    public var reason: String?
    public var apnsID: String?
    /// Seconds from a `retry-after` header, when APNs sent one.
    public var retryAfterSeconds: Double?

    public init(status: Int, reason: String? = nil, apnsID: String? = nil, retryAfterSeconds: Double? = nil) {
        self.status = status
        self.reason = reason
        self.apnsID = apnsID
        self.retryAfterSeconds = retryAfterSeconds
    }
}
