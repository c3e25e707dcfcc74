import Foundation
import LiveRelayCore
import LiveRelayStore

// Request bodies of the broadcast channel routes.

/// `POST /v1/channels`: `{name, bundleId?, apnsEnv?, storagePolicy?, attributesType?, contentState?, priority?}`.
struct CreateChannelBody: Decodable {
    var channel: NewChannel

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        channel = NewChannel(
            name: try fields.string("name", maxLength: 64),
            bundleID: try fields.optionalBundleID("bundleId"),
            environment: try fields.optionalChoice("apnsEnv", as: APNsEnvironment.self),
            storagePolicy: try Self.choice(fields, "storagePolicy", among: [0, 1]),
            attributesType: try fields.optionalString("attributesType", maxLength: 255),
            contentState: try fields.optionalObject("contentState"),
            priority: try Self.choice(fields, "priority", among: [5, 10]))
    }

    /// A whole number that must be one of `allowed`.
    static func choice(_ fields: BodyFields, _ name: String, among allowed: [Int]) throws -> Int? {
        guard let value = try fields.value(name) else { return nil }
        guard case .integer(let number) = value, allowed.contains(Int(number)) else {
            throw APIError.badRequest("\(name) must be \(allowed.map(String.init).joined(separator: " or "))")
        }
        return Int(number)
    }
}

/// `PATCH /v1/channels/{name}`: `{contentState?, status?, staleDate?, dismissalDate?, priority?}`.
struct UpdateChannelBody: Decodable {
    var change: ChannelChange

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        func epoch(_ name: String) throws -> Int64? {
            try fields.optionalDate(name).map { Int64($0.timeIntervalSince1970) }
        }
        change = ChannelChange(
            contentState: try fields.optionalObject("contentState"),
            status: try fields.optionalChoice("status", as: ChannelStatus.self, emptyIsMissing: false),
            staleDate: try epoch("staleDate"), dismissalDate: try epoch("dismissalDate"),
            priority: try CreateChannelBody.choice(fields, "priority", among: [5, 10]))
        guard change.contentState != nil || change.status != nil || change.staleDate != nil
            || change.dismissalDate != nil || change.priority != nil else {
            throw APIError.badRequest("give at least one of contentState, status, staleDate, dismissalDate, priority")
        }
    }
}

/// `POST /v1/channels/{name}/start`: `{deviceUUIDs, attributes?, alert?}`.
struct StartChannelBody: Decodable {
    var devices: [UUID]
    var attributes: JSONValue?
    var alert: JSONValue?

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        guard case .array(let values)? = try fields.value("deviceUUIDs"), !values.isEmpty, values.count <= 1000 else {
            throw APIError.badRequest("deviceUUIDs must be a list of 1 to 1000 device UUIDs")
        }
        devices = try values.map { value in
            guard let text = value.stringValue, let uuid = UUID(uuidString: text) else {
                throw APIError.badRequest("deviceUUIDs must hold UUIDs")
            }
            return uuid
        }
        attributes = try fields.optionalObject("attributes")
        alert = try fields.optionalAlert("alert")
    }
}
