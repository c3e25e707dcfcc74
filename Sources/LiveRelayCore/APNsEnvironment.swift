/// Which APNs server a token belongs to (`apns_env`).
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    case sandbox, production

    /// The other environment, tried once when APNs says a token is bad for this one.
    public var other: APNsEnvironment { self == .sandbox ? .production : .sandbox }
}
