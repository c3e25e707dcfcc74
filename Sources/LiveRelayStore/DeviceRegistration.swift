import Foundation
import LiveRelayCore

/// A device's push token under a pairing secret (`POST /v1/device/register`), with the optional name and uuid
/// people and agents know it by.
public struct DeviceRegistration: Sendable {
    public var secretHash: String
    public var token: String
    public var bundleID: String
    public var environment: APNsEnvironment
    public var platform: Platform
    /// The `SessionActivityAttributes` push-to-start token (the OpenCode app's).
    public var pushToStartToken: String?
    /// Push-to-start tokens by attributes type (iOS 17.2+ reports one per type); each replaces the type's old one.
    public var pushToStartTokens: [String: String] = [:]
    public var deviceName: String?
    public var deviceUUID: UUID?
    /// The WidgetKit push token of the app's widgets (iOS 26): they reload when what the device shows changes.
    public var widgetPushToken: String?

    public init(secretHash: String, token: String, bundleID: String, environment: APNsEnvironment, platform: Platform,
                pushToStartToken: String? = nil, deviceName: String? = nil, deviceUUID: UUID? = nil) {
        self.secretHash = secretHash
        self.token = token
        self.bundleID = bundleID
        self.environment = environment
        self.platform = platform
        self.pushToStartToken = pushToStartToken
        self.deviceName = deviceName
        self.deviceUUID = deviceUUID
    }
}

extension RelayStore {
    /// Registers the token, or updates its row: a name, uuid, push-to-start or widget token left out keeps the stored
    /// one;
    /// push-to-start tokens by type replace those of their types.
    public func registerDevice(_ device: DeviceRegistration) async throws {
        let environment = device.environment.rawValue, platform = device.platform.rawValue
        let tokensByType = JSONValue.object(device.pushToStartTokens.mapValues(JSONValue.string)).compactText
        try await execute("""
            WITH d AS (
            INSERT INTO device_registration (secret_hash, device_token, bundle_id, apns_env, push_to_start_token,
                                             platform, device_name, device_uuid, widget_push_token)
            VALUES (\(device.secretHash), \(device.token), \(device.bundleID), \(environment),
                    \(device.pushToStartToken), \(platform), \(device.deviceName), \(device.deviceUUID),
                    \(device.widgetPushToken))
            ON CONFLICT (secret_hash, device_token) DO UPDATE
            SET bundle_id = excluded.bundle_id, apns_env = excluded.apns_env, platform = excluded.platform,
                push_to_start_token = coalesce(excluded.push_to_start_token, device_registration.push_to_start_token),
                device_name = coalesce(excluded.device_name, device_registration.device_name),
                device_uuid = coalesce(excluded.device_uuid, device_registration.device_uuid),
                widget_push_token = coalesce(excluded.widget_push_token, device_registration.widget_push_token)
            RETURNING id)
            INSERT INTO device_push_to_start (device_id, attributes_type, token)
            SELECT d.id, t.key, t.value FROM d, jsonb_each_text(\(tokensByType)::jsonb) AS t
            ON CONFLICT (device_id, attributes_type) DO UPDATE SET token = excluded.token, updated_at = now()
            """)
    }
}
