import Foundation
import LiveRelayWAL
import NIOCore
import NIOSSL
import PostgresNIO

extension DatabaseConnector {
    /// TLS for every connection the relay opens (its sessions, its pool, its replication connection), from
    /// `DATABASE_URL`'s `sslmode`, `sslrootcert`, `sslcert` and `sslkey`, as libpq reads them:
    /// - `disable`: none;
    /// - `prefer` (the default): TLS when the server offers it; `require`: TLS or no connection. Neither checks the
    ///   server's certificate unless `sslrootcert` names a CA (then it must sign it: `verify-ca`), so a server with a
    ///   self-signed certificate (a managed service's, Debian's own) is reached as psql reaches it;
    /// - `verify-ca`: TLS, the certificate signed by `sslrootcert`'s CA or one the system trusts;
    /// - `verify-full`: the same, and the certificate names the host (or its address).
    /// `sslcert` and `sslkey` (PEM files, given together) are the relay's client certificate, for a server whose
    /// `pg_hba.conf` says `cert` or `clientcert=verify-full`; unlike libpq's, no default file is looked for.
    /// `sslpassword` is the passphrase of an encrypted `sslkey` (ignored for a key that is not encrypted, as libpq).
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

        init(sslMode: String, rootFile: String?, client: ClientCertificateFiles? = nil, host: String) throws {
            var configuration = TLSConfiguration.makeClientConfiguration()
            if let client {
                (configuration.certificateChain, configuration.privateKey) = try client.load()
            }
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
            let context: NIOSSLContext
            do {
                context = try NIOSSLContext(configuration: configuration)
            } catch NIOSSLError.failedToLoadPrivateKey where client != nil {
                throw DatabaseURLError(problem: "has an sslkey= that is not the key of sslcert='s certificate")
            }
            session = required ? .require(context) : .prefer(context)
            pool = required ? .require(configuration) : .prefer(configuration)
            // Certificates name hosts, not addresses (an address is checked against the certificate's IP entries).
            let serverName = (try? SocketAddress(ipAddress: host, port: 0)) == nil ? host : nil
            replication = ReplicationTLS(context: context, serverName: serverName, required: required)
        }
    }

    /// `sslcert`, `sslkey` and `sslpassword`: the client certificate (its chain, leaf first), its private key and
    /// the key's passphrase when the key is encrypted.
    struct ClientCertificateFiles {
        var certificate: String
        var key: String
        var passphrase: String?

        /// Both or neither: libpq would look for the missing one in `~/.postgresql/`, which a relay in a container
        /// has not got, so the URL names both.
        init?(certificate: String?, key: String?, passphrase: String? = nil) throws {
            self.passphrase = passphrase
            switch (certificate, key) {
            case (nil, nil):
                guard passphrase == nil else {
                    throw DatabaseURLError(problem: "has sslpassword= without sslcert= and sslkey= (it is the "
                        + "passphrase of sslkey='s file)")
                }
                return nil
            case let (certificate?, key?):
                (self.certificate, self.key) = (certificate, key)
            case (_?, nil):
                throw DatabaseURLError(problem: "has sslcert= without sslkey= (name the client certificate's key file)")
            case (nil, _?):
                throw DatabaseURLError(problem: "has sslkey= without sslcert= (name the client certificate's file)")
            }
        }

        func load() throws -> ([NIOSSLCertificateSource], NIOSSLPrivateKeySource) {
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificate)
            } catch {
                throw DatabaseURLError(problem: "has sslcert=\(certificate), which is not a readable PEM file")
            }
            guard !chain.isEmpty else {
                throw DatabaseURLError(problem: "has sslcert=\(certificate), which holds no certificate")
            }
            return (chain.map { .certificate($0) }, .privateKey(try loadKey()))
        }

        /// The key, decrypted with `passphrase` when it is encrypted (PKCS #8's `ENCRYPTED PRIVATE KEY`, or
        /// OpenSSL's older `Proc-Type: 4,ENCRYPTED`). BoringSSL asks the callback for a passphrase only for an
        /// encrypted key, which is how the refusal tells the cases apart; and since there always is a callback, it
        /// never asks on standard input (its default).
        private func loadKey() throws -> NIOSSLPrivateKey {
            guard let pem = FileManager.default.contents(atPath: key) else {
                throw DatabaseURLError(problem: "has sslkey=\(key), which is not a readable PEM private key")
            }
            var encrypted = false
            do {
                return try NIOSSLPrivateKey(bytes: Array(pem), format: .pem) { (setter: ([UInt8]) -> Void) in
                    encrypted = true
                    if let passphrase { setter(Array(passphrase.utf8)) }
                }
            } catch {
                guard encrypted else {
                    throw DatabaseURLError(problem: "has sslkey=\(key), which is not a readable PEM private key")
                }
                guard passphrase != nil else {
                    throw DatabaseURLError(problem: "has sslkey=\(key), which is encrypted: give its passphrase as "
                        + "sslpassword=")
                }
                throw DatabaseURLError(problem: "has sslkey=\(key), which sslpassword= does not decrypt")
            }
        }
    }
}
