import Foundation
import LiveRelayCore
import LiveRelayStore

// Request bodies of the admin API (generic Live Activities and device messages).

/// `POST /v1/live-activities`.
struct CreateLiveActivityBody: Decodable {
    var platform: Platform
    /// Nil: the activity waits for its token (`PUT /v1/live-activities/{id}/token`), keeping its state meanwhile.
    var token: String?
    var frequentUpdates: Bool
    var bundleID: String?
    var environment: APNsEnvironment
    var activityType: String?
    var attributes: JSONValue?
    var contentState: JSONValue?
    var externalID: String?
    var userID: String?
    var deviceUUID: UUID?

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        platform = try fields.optionalChoice("platform", as: Platform.self) ?? .ios
        let tokenGiven = PushTokenField.names.contains { fields.has($0) }
        token = tokenGiven ? try PushTokenField.read(fields) : nil
        frequentUpdates = try fields.optionalBool("frequentUpdates") ?? false
        bundleID = try fields.optionalBundleID("bundleId")
        environment = try fields.optionalChoice("apnsEnv", as: APNsEnvironment.self) ?? .production
        activityType = try fields.optionalString("activityType", maxLength: 255)
        attributes = try fields.optionalObject("attributes")
        contentState = try fields.optionalObject("contentState")
        externalID = try fields.optionalString("externalId", maxLength: 255)
        userID = try fields.optionalString("userId", maxLength: 255)
        deviceUUID = try fields.optionalUUID("deviceUUID")
    }
}

/// `PATCH /v1/live-activities/{id}`: `{contentState, alert?: {title, body}, staleDate?, relevanceScore?, priority?}`.
struct UpdateLiveActivityBody: Decodable {
    var update: LiveActivityUpdate

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        guard let state = try fields.optionalObject("contentState") else {
            throw APIError.badRequest("contentState is required")
        }
        var priority: Int16?
        if let value = try fields.value("priority") {
            guard value == .integer(5) || value == .integer(10) else {
                throw APIError.badRequest("priority must be 5 or 10")
            }
            priority = value == .integer(5) ? 5 : 10
        }
        let relevance: Double?
        switch try fields.value("relevanceScore") {
        case nil: relevance = nil
        case .integer(let value)?: relevance = Double(value)
        case .number(let value)?: relevance = value
        default: throw APIError.badRequest("relevanceScore must be a number")
        }
        update = LiveActivityUpdate(
            contentState: state, alert: try fields.optionalAlert("alert"),
            staleDate: try fields.optionalDate("staleDate"), relevanceScore: relevance, priority: priority)
    }
}

/// `DELETE /v1/live-activities/{id}` may carry `{dismissalDate}`.
struct EndLiveActivityBody: Decodable {
    var dismissalDate: Date?

    init(from decoder: any Decoder) throws {
        dismissalDate = try BodyFields(decoder).optionalDate("dismissalDate")
    }
}

/// `PUT /v1/live-activities/{id}/token`: `{token}` (or `pushToken`, or `fcmToken`).
struct RotateTokenBody: Decodable {
    var token: String

    init(from decoder: any Decoder) throws {
        token = try PushTokenField.read(try BodyFields(decoder))
    }
}

/// The push token of an activity: `token` or `pushToken` (APNs), or `fcmToken` (FCM, as Sendora names it).
enum PushTokenField {
    static let names = ["token", "pushToken", "fcmToken"]

    static func read(_ fields: BodyFields) throws -> String {
        // An empty or null name is a client's mistake, not "left out" (it would hide a differing other name).
        for name in names where fields.has(name) {
            switch try fields.value(name) {
            case .string("")?: throw APIError.badRequest("\(name) must not be empty")
            case .string?: continue
            default: throw APIError.badRequest("\(name) must be a string")
            }
        }
        guard let fcm = try fields.optionalPushToken("fcmToken") else {
            let name = fields.has("token") ? "token" : "pushToken"
            return try BodyFields.checkedToken(try fields.string("token", or: "pushToken", maxLength: 512), named: name)
        }
        if !fields.has("token"), !fields.has("pushToken") { return fcm }
        guard try fields.string("token", or: "pushToken", maxLength: 512) == fcm else {
            throw APIError.badRequest("fcmToken and token differ: give one of them")
        }
        return fcm
    }
}

/// `POST /rest/v1/device_live_activity_message`: one row or an array of 1 to 1000 rows.
struct DeviceMessageBody: Decodable {
    struct Row: Decodable {
        var device: UUID
        var message: String
        var updatedBy: String?

        init(from decoder: any Decoder) throws {
            let fields = try BodyFields(decoder)
            guard let device = UUID(uuidString: try fields.string("device_uuid", maxLength: 64)) else {
                throw APIError.badRequest("device_uuid must be a UUID")
            }
            guard case .string(let message)? = try fields.value("message") else {
                throw APIError.badRequest("message is required (a string; \"\" clears it)")
            }
            if let refusal = RelayStore.messageLengthRefusal(message) { throw APIError.badRequest(refusal) }
            self.device = device
            self.message = message
            updatedBy = try fields.optionalString("updated_by", maxLength: 255)
        }
    }

    var rows: [Row]

    init(from decoder: any Decoder) throws {
        if let rows = try? decoder.singleValueContainer().decode([JSONValue].self) {
            guard !rows.isEmpty, rows.count <= 1000 else {
                throw APIError.badRequest("the body must be an object or an array of 1 to 1000 objects")
            }
            self.rows = try decoder.singleValueContainer().decode([Row].self)
        } else if (try? decoder.container(keyedBy: BodyFields.Key.self)) != nil {
            rows = [try Row(from: decoder)]
        } else {
            throw APIError.badRequest("the body must be an object or an array of 1 to 1000 objects")
        }
    }
}
