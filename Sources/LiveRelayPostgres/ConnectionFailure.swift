import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// Why PostgreSQL could not be reached, in the words an operator needs: where, and what the system said
/// ("cannot connect to PostgreSQL at db:5432: Connection refused"). PostgresNIO reports it as a `PSQLError` whose code
/// alone ("connectionError") says neither, around NIO's error, whose description is a nested dump.
enum ConnectionFailure {
    /// The sentence for `error`, or nil when it is not a failure to connect or to log in.
    static func describe(_ error: PSQLError) -> String? {
        switch error.code {
        case .connectionError:
            guard let underlying = error.underlying else { return "cannot connect to PostgreSQL" }
            if let failure = underlying as? NIOConnectionError {
                return "cannot connect to PostgreSQL at \(failure.host):\(failure.port): \(cause(of: failure))"
            }
            return "cannot connect to PostgreSQL: \(reason(underlying))"
        case .serverClosedConnection:
            return "PostgreSQL closed the connection" + (error.underlying.map { " (\(reason($0)))" } ?? "")
        case .sslUnsupported:
            return "PostgreSQL does not accept TLS connections, which DATABASE_URL's sslmode requires"
        case .authMechanismRequiresPassword:
            return "PostgreSQL asks for a password, and DATABASE_URL gives none"
        case .unsupportedAuthMechanism:
            return "PostgreSQL asks for a login method LiveRelay does not support (use scram-sha-256, md5 or trust)"
        default:
            return nil
        }
    }

    /// What went wrong with each address tried, or with the name's lookup when there was none to try.
    private static func cause(of failure: NIOConnectionError) -> String {
        var reasons: [String] = []
        for attempt in failure.connectionErrors where !reasons.contains(reason(attempt.error)) {
            reasons.append(reason(attempt.error))
        }
        if !reasons.isEmpty { return reasons.joined(separator: "; ") }
        if let lookup = (failure.dnsAError ?? failure.dnsAAAAError) as? SocketAddressError.UnknownHost {
            return "the name does not resolve (\(lookup.errorDescription))"
        }
        if let lookup = failure.dnsAError ?? failure.dnsAAAAError {
            return "the name does not resolve (\(lookup))"
        }
        return "the name has no address"
    }

    private static func reason(_ error: any Error) -> String {
        if let error = error as? NIOSSLError { return tlsReason(error) }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        if case .connectTimeout? = error as? ChannelError { return "no answer in time" }
        return String(describing: error)
    }

    /// A TLS failure in words: NIOSSL's own description is BoringSSL's error stack.
    static func tlsReason(_ error: NIOSSLError) -> String {
        guard case let .handshakeFailed(stack) = error else { return "TLS failed (\(error))" }
        if String(describing: stack).contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's TLS certificate was not accepted (not signed by a CA the relay trusts, or not for "
                + "this host): name its CA's PEM file with sslrootcert= in DATABASE_URL"
        }
        return "the TLS handshake failed (\(stack))"
    }
}
