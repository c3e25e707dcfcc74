import Foundation
import LiveRelayWAL
import NIOCore
import NIOSSL
import PostgresNIO

extension DatabaseConnector {
    /// TLS for every connection the relay opens (its sessions, its pool, its replication connection), from
    /// `DATABASE_URL`'s `sslmode` and `sslrootcert`, as libpq reads them:
    /// - `disable`: none;
    /// - `prefer` (the default): TLS when the server offers it; `require`: TLS or no connection. Neither checks the
    ///   server's certificate unless `sslrootcert` names a CA (then it must sign it: `verify-ca`), so a server with a
    ///   self-signed certificate (a managed service's, Debian's own) is reached as psql reaches it;
    /// - `verify-ca`: TLS, the certificate signed by `sslrootcert`'s CA or one the system trusts;
    /// - `verify-full`: the same, and the certificate names the host (or its address).
    /// libpq's `sslmode` values.
    enum SSLMode: String {
        case disable, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    struct TLSSettings {
        var session: PostgresConnection.Configuration.TLS
        var pool: PostgresClient.Configuration.TLS
        var replication: ReplicationTLS?

        init(sslMode: String, rootFile: String?, host: String) throws {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let rootFile {
                do {
                    configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(rootFile))
                } catch {
                    throw DatabaseURLError(problem: "has sslrootcert=\(rootFile), which is not a readable PEM file")
                }
            }
            guard let mode = SSLMode(rawValue: sslMode) else {
                throw DatabaseURLError(problem: "has an unknown sslmode \(sslMode) "
                    + "(use disable, prefer, require, verify-ca or verify-full)")
            }
            switch mode {
            case .disable:
                (session, pool, replication) = (.disable, .disable, nil)
                return
            case .prefer, .require:
                configuration.certificateVerification = rootFile == nil ? .none : .noHostnameVerification
            case .verifyCA:
                configuration.certificateVerification = .noHostnameVerification
            case .verifyFull:
                configuration.certificateVerification = .fullVerification
            }
            let required = mode != .prefer
            let context = try NIOSSLContext(configuration: configuration)
            session = required ? .require(context) : .prefer(context)
            pool = required ? .require(configuration) : .prefer(configuration)
            // Certificates name hosts, not addresses (an address is checked against the certificate's IP entries).
            let serverName = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
            replication = ReplicationTLS(context: context, serverName: serverName, required: required)
        }
    }
}
