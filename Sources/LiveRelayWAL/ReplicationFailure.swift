/// Why a replication connection could not be used: each says what the operator can do about it.
public enum ReplicationFailure: Error, Equatable, CustomStringConvertible {
    case refused(String, code: String)
    case unsupportedAuthentication(Int32)
    case cleartextPasswordWithoutTLS
    case tlsRefused
    case passwordRequired
    case unexpectedMessage(UInt8, while: String)
    case brokenStream
    case closed(while: String)
    case silent(seconds: Int)

    /// Whether trying again cannot help until the operator changes something: the login or the privilege was refused
    /// (SQLSTATE class 28, or 42501), the server asks for a way of logging in this connection does not offer, or it
    /// has no TLS and `sslmode` (require or stricter) asks for it.
    public var isPermanent: Bool {
        switch self {
        case let .refused(_, code): code.hasPrefix("28") || code == "42501"
        case .unsupportedAuthentication, .cleartextPasswordWithoutTLS, .passwordRequired, .tlsRefused: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .refused(message, code): "PostgreSQL refused: \(message)" + (code.isEmpty ? "" : " (SQLSTATE \(code))")
        case let .unsupportedAuthentication(code):
            "PostgreSQL asked for an authentication method (\(code)) not supported here"
        case .cleartextPasswordWithoutTLS: "PostgreSQL asked for the password in clear text on a connection without TLS"
        case .tlsRefused: "PostgreSQL does not accept TLS, which DATABASE_URL's sslmode (require or stricter) asks for"
        case .passwordRequired: "PostgreSQL asked for a password and DATABASE_URL has none"
        case let .unexpectedMessage(type, what):
            "PostgreSQL sent an unexpected '\(Character(Unicode.Scalar(type)))' message while \(what)"
        case .brokenStream: "the replication stream could not be read"
        case let .closed(what): "the connection closed while \(what)"
        case let .silent(seconds): "PostgreSQL sent nothing for \(seconds) s"
        }
    }
}
