import Foundation

/// How a caller names a device: by its uuid, or by the name it registered with (`device_name`, any case).
public enum DeviceSelector: Sendable, Equatable, CustomStringConvertible {
    case uuid(UUID)
    case name(String)

    /// Exactly one of the two, as the MCP tools take them.
    public init(uuid: String?, name: String?) throws {
        switch (uuid, name) {
        case (let text?, nil):
            guard let value = UUID(uuidString: text) else {
                throw StoreError.invalidArgument("device_uuid must be a UUID like 6f1c…-…; got \(text.excerpt)")
            }
            self = .uuid(value)
        case (nil, let name?):
            guard !name.isEmpty, name.utf8.count <= 255 else {
                throw StoreError.invalidArgument("deviceName must be 1 to 255 characters")
            }
            self = .name(name)
        case (_?, _?): throw StoreError.invalidArgument("give either device_uuid or deviceName, not both")
        case (nil, nil): throw StoreError.invalidArgument("give device_uuid or deviceName to say which device")
        }
    }

    public var description: String {
        switch self {
        case .uuid(let uuid): "device \(uuid.uuidString.lowercased())"
        case .name(let name): "device named \"\(name)\""
        }
    }
}

/// How a caller names a Live Activity: by its row id, or by its session id.
public enum ActivitySelector: Sendable, Equatable, CustomStringConvertible {
    case id(UUID)
    case sessionID(String)

    public init(id: String?, sessionID: String?) throws {
        switch (id, sessionID) {
        case (let text?, nil):
            guard let value = UUID(uuidString: text) else { throw StoreError.invalidArgument("id must be a UUID") }
            self = .id(value)
        case (nil, let session?):
            guard !session.isEmpty, session.utf8.count <= 255 else {
                throw StoreError.invalidArgument("session_id must be 1 to 255 characters")
            }
            self = .sessionID(session)
        case (_?, _?): throw StoreError.invalidArgument("give either session_id or id, not both")
        case (nil, nil): throw StoreError.invalidArgument("give session_id or id to say which live activity")
        }
    }

    public var description: String {
        switch self {
        case .id(let id): "live activity \(id.uuidString.lowercased())"
        case .sessionID(let session): "live activity with session_id \"\(session)\""
        }
    }
}
