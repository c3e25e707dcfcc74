import Foundation
import LiveRelayCore

/// A channel of the foreground stream, parsed once from the `channel` query parameter.
public enum StreamChannel: Hashable, Sendable {
    /// A device's activities and messages (`device:<uuid>`).
    case device(UUID)
    /// One session's activities (`session:<id>`).
    case session(String)
    /// A broadcast channel's updates and end (`channel:<name>`).
    case broadcast(String)
    /// Delivery summaries (`admin`).
    case admin
    /// Every channel (`*`).
    case every

    /// The longest session id a channel may name (as `activity_registration.session_id` allows).
    public static let maximumSessionIDLength = 255

    /// A broadcast channel's name as `broadcast_channel.name` allows it: 1-64 of `A-Za-z0-9_.~%-`.
    static func isChannelName(_ name: Substring) -> Bool {
        (1...64).contains(name.count)
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_.~%-".contains($0)) }
    }

    /// What follows `prefix` in `text`; nil when `text` does not begin with it.
    static func rest(of text: String, after prefix: String) -> Substring? {
        text.hasPrefix(prefix) ? text.dropFirst(prefix.count) : nil
    }

    /// Nil for anything that is not one of the five forms (`parse` says why).
    public init?(parsing text: String) {
        guard case .success(let channel) = Self.parse(text) else { return nil }
        self = channel
    }

    /// The channel `text` names, or why it names none: the rule of the form it begins like, or the forms there are,
    /// quoting it.
    public static func parse(_ text: String) -> Result<StreamChannel, Refusal> {
        let quoted = "channel \"\(text.excerpt)\""
        switch text {
        case "admin": return .success(.admin)
        case "*": return .success(.every)
        default:
            if let rest = rest(of: text, after: "device:") {
                guard let uuid = UUID(uuidString: String(rest)) else {
                    return .failure(Refusal("\(quoted) does not name a device: device: takes a UUID (device:<uuid>)"))
                }
                return .success(.device(uuid))
            }
            if let rest = rest(of: text, after: "session:") {
                guard (1...maximumSessionIDLength).contains(rest.count) else {
                    return .failure(Refusal(
                        "\(quoted) does not name a session: a session id is 1-\(maximumSessionIDLength) characters"))
                }
                return .success(.session(String(rest)))
            }
            if let rest = rest(of: text, after: "channel:") {
                guard isChannelName(rest) else {
                    return .failure(Refusal(
                        "\(quoted) does not name a broadcast channel: a name is 1-64 of A-Z, a-z, 0-9 and _.~%-"))
                }
                return .success(.broadcast(String(rest)))
            }
            return .failure(Refusal("\(quoted) must be \(forms)"))
        }
    }

    /// The name the broadcast log's rows carry (a device's uuid in lower case, as PostgreSQL writes it).
    public var name: String {
        switch self {
        case .device(let uuid): "device:" + uuid.uuidString.lowercased()
        case .session(let id): "session:" + id
        case .broadcast(let name): "channel:" + name
        case .admin: "admin"
        case .every: BroadcastHub.everyChannel
        }
    }

}
