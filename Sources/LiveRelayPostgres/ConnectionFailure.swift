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
        if let tls = tlsReason(error) { return tls }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        if case .connectTimeout? = error as? ChannelError { return "no answer in time" }
        return String(describing: error)
    }

    /// A TLS failure in words, or nil for another error: NIOSSL's own description is BoringSSL's error stack.
    static func tlsReason(_ error: any Error) -> String? {
        let said: String
        switch error {
        case NIOSSLError.handshakeFailed(let stack): said = String(describing: stack)
        // Under TLS 1.3 the server checks the client's certificate after the client's half of the handshake: its
        // refusal comes as the first read's error.
        case BoringSSLError.sslError(let stack): said = String(describing: stack)
        case let error as NIOSSLError: return "TLS failed (\(error))"
        default: return nil
        }
        if said.contains("CERTIFICATE_VERIFY_FAILED") {
            return "the server's TLS certificate was not accepted (not signed by a CA the relay trusts, or not for "
                + "this host): name its CA's PEM file with sslrootcert= in DATABASE_URL"
        }
        // The server's alerts about the certificate the relay showed (BoringSSL's names for them; a decrypt error is
        // a certificate whose signature does not verify with the server's CA of that name).
        if ["ALERT_UNKNOWN_CA", "ALERT_BAD_CERTIFICATE", "ALERT_CERTIFICATE_UNKNOWN", "ALERT_CERTIFICATE_REQUIRED",
            "ALERT_CERTIFICATE_EXPIRED", "ALERT_ACCESS_DENIED", "ALERT_DECRYPT_ERROR"].contains(where: said.contains) {
            return "the server did not accept the relay's client certificate (sslcert=): it must be signed by a CA "
                + "in the server's ssl_ca_file, and current"
        }
        return "TLS failed (\(said))"
    }
}
