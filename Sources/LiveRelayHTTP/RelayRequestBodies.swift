import Foundation
import LiveRelayCore

// The OpenCode relay API's request bodies, exactly as the original relay reads them.

/// `POST /v1/device/register`. `deviceName` and `deviceUUID` name the device for people and agents.
struct DeviceRegistrationBody: Decodable {
    var secret: String
    var deviceToken: String
    var bundleID: String?
    var environment: APNsEnvironment
    var pushToStartToken: String?
    /// Push-to-start tokens by attributes type (at most 32 types).
    var pushToStartTokens: [String: String] = [:]
    var platform: Platform
    var deviceName: String?
    var deviceUUID: UUID?
    /// The WidgetKit push token (iOS 26).
    var widgetPushToken: String?

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        secret = try fields.string("secret")
        deviceToken = try fields.pushToken("deviceToken")
        bundleID = try fields.optionalBundleID("bundleId")
        environment = try fields.optionalChoice("apnsEnv", as: APNsEnvironment.self) ?? .production
        pushToStartToken = try fields.optionalPushToken("pushToStartToken")
        if let tokens = try fields.optionalObject("pushToStartTokens")?.objectValue {
            guard tokens.count <= 32 else { throw APIError.badRequest("pushToStartTokens has more than 32 types") }
            for (type, token) in tokens {
                guard (1...255).contains(type.unicodeScalars.count), !type.utf8.contains(0) else {
                    throw APIError.badRequest("pushToStartTokens: an attributes type must be 1 to 255 characters")
                }
                guard case .string(let text) = token, (1...512).contains(text.unicodeScalars.count),
                      !text.utf8.contains(0) else {
                    throw APIError.badRequest(
                        "pushToStartTokens.\(type) must be a token string of 1 to 512 characters")
                }
                pushToStartTokens[type] = try BodyFields.checkedToken(text, named: "pushToStartTokens.\(type)")
            }
        }
        platform = try fields.optionalChoice("platform", as: Platform.self) ?? .ios
        deviceName = try fields.optionalString("deviceName", maxLength: 255)
        deviceUUID = try fields.optionalUUID("deviceUUID")
        widgetPushToken = try fields.optionalPushToken("widgetPushToken")
        if widgetPushToken != nil, platform != .ios {
            throw APIError.badRequest("widgetPushToken is for iOS devices (platform ios)")
        }
        // (Stored, they would never be used: an Android activity starts with a message to the device's FCM token.)
        if platform != .ios, pushToStartToken != nil || !pushToStartTokens.isEmpty {
            let given = pushToStartToken != nil ? "pushToStartToken" : "pushToStartTokens"
            throw APIError.badRequest("\(given) is for iOS devices (platform ios): an Android device's activities "
                + "start with a message to its FCM token, deviceToken")
        }
    }
}

/// `POST /v1/device/unregister`.
struct DeviceUnregistrationBody: Decodable {
    var secret: String
    var deviceToken: String

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        secret = try fields.string("secret")
        deviceToken = try fields.string("deviceToken", maxLength: 512)
    }
}

/// `POST /v1/activity/register`.
struct ActivityRegistrationBody: Decodable {
    var secret: String
    var sessionID: String
    var activityToken: String
    var bundleID: String?
    var environment: APNsEnvironment
    var platform: Platform

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        secret = try fields.string("secret")
        sessionID = try fields.string("sessionID", maxLength: 255)
        activityToken = try fields.pushToken("activityToken")
        bundleID = try fields.optionalBundleID("bundleId")
        environment = try fields.optionalChoice("apnsEnv", as: APNsEnvironment.self) ?? .production
        platform = try fields.optionalChoice("platform", as: Platform.self) ?? .ios
    }
}

/// `POST /v1/activity/unregister`.
struct ActivityUnregistrationBody: Decodable {
    var secret: String
    var sessionID: String

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        secret = try fields.string("secret")
        sessionID = try fields.string("sessionID", maxLength: 255)
    }
}

/// `POST /v1/event`: an alert (`complete`, `permission`, `error`) or a Live Activity event (`progress`, `start`).
struct EventBody: Decodable {
    enum Kind: String, CaseIterable {
        case complete, permission, error, progress, start
    }

    var secret: String
    var kind: Kind
    var sessionID: String
    var title: String?
    var body: String?
    var serverID: String?
    var contentState: JSONValue?

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        secret = try fields.string("secret")
        let name = try fields.string("eventType", maxLength: 32)
        guard let kind = Kind(rawValue: name) else {
            throw APIError.badRequest(Kind.refusal(of: name, named: "eventType"))
        }
        self.kind = kind
        sessionID = try fields.string("sessionID", maxLength: 255)
        title = try fields.optionalNonEmptyString("title", maxLength: 1024)
        body = try fields.optionalNonEmptyString("body", maxLength: 2048)
        serverID = try fields.optionalString("serverID", maxLength: 255)
        contentState = try fields.optionalObject("contentState")
    }
}
