import Foundation
import LiveRelayDevSupport
import LiveRelayPostgres
import LiveRelayTestSupport
import Logging
import PostgresNIO
import Testing

extension WALWakeupTests {
    /// A cluster that logs in nobody without a client certificate its CA signed (only `hostssl … cert` lines): the
    /// URL with `sslmode=verify-full` and the CA, and the files of a certificate for `postgres`.
    static let certificateCluster = Result { try certificateOnlyCluster() }

    struct CertificateCluster {
        var url: String
        var certificate: String
        var key: String
        /// The same key encrypted (PKCS #8) with `passphrase`.
        var encryptedKey: String
        static let passphrase = "relay-key-passphrase"
        /// Certificates for `postgres` the server must refuse: from another CA, and from another CA of its CA's name.
        var strangers: [(certificate: String, key: String)]
    }

    static func certificateOnlyCluster() throws -> CertificateCluster {
        let postgres = try TestCluster.make(name: "certs")
        try postgres.createDatabase("certs")
        let authority = try SimulatorCertificate.generate()
        // The CA that signs the server's certificate is the one clients' certificates must come from.
        try Data(authority.caPEM.utf8).write(to: URL(fileURLWithPath: postgres.dataDirectory + "/root.crt"))
        try serveOnlyTLS(postgres, certificate: authority, login: "cert", settings: "ssl_ca_file = 'root.crt'\n")
        let prefix = TestCluster.base + "/client-\(UUID().uuidString.prefix(8))"
        let client = try authority.clientCertificate(user: "postgres")
        let stranger = try SimulatorCertificate.generate(authority: "Another CA").clientCertificate(user: "postgres")
        let impostor = try SimulatorCertificate.generate().clientCertificate(user: "postgres")
        let written: [(String, String)] = [
            ("ca.pem", authority.caPEM), ("cert.pem", client.certificatePEM), ("key.pem", client.keyPEM),
            ("encrypted-key.pem", try SimulatorCertificate.encrypt(
                keyPEM: client.keyPEM, passphrase: CertificateCluster.passphrase, as: .pkcs8)),
            ("stranger-cert.pem", stranger.certificatePEM), ("stranger-key.pem", stranger.keyPEM),
            ("impostor-cert.pem", impostor.certificatePEM), ("impostor-key.pem", impostor.keyPEM),
        ]
        for (name, pem) in written { try Data(pem.utf8).write(to: URL(fileURLWithPath: "\(prefix)-\(name)")) }
        return CertificateCluster(
            url: "postgres://postgres@127.0.0.1:\(postgres.port)/certs"
                + "?sslmode=verify-full&sslrootcert=\(prefix)-ca.pem",
            certificate: prefix + "-cert.pem", key: prefix + "-key.pem", encryptedKey: prefix + "-encrypted-key.pem",
            strangers: ["stranger", "impostor"].map { (prefix + "-\($0)-cert.pem", prefix + "-\($0)-key.pem") })
    }

    @Test("""
        sslcert and sslkey: a server that logs in by client certificate alone (pg_hba.conf's cert) lets the relay's \
        sessions and its replication connection in, and writes wake the relay from the log without NOTIFY
        """)
    func clientCertificateLogin() async throws {
        let cluster = try await Blocking.run { try Self.certificateCluster.get() }
        let url = "\(cluster.url)&sslcert=\(cluster.certificate)&sslkey=\(cluster.key)"
        try await Harness.with(databaseURL: url) { h in
            try await h.withRelay(environment: Self.pollOff) {
                try await h.waitUntil("SELECT bool_and(reads_wal AND NOT idle) FROM relay_wakeup")
                // This relay's walsender, named after its gate row, logged in with the certificate.
                let names = try await h.rows("""
                    SELECT s.client_dn FROM pg_stat_replication r JOIN relay_wakeup w
                    ON r.application_name = 'liverelay-wal-' || left(w.instance_id::text, 8)
                    JOIN pg_stat_ssl s ON s.pid = r.pid
                    """, as: String.self)
                #expect(names == ["/CN=postgres"])
                let token = try await h.registerActivity(session: "s-cert")
                let heard = try await h.wakeUpNotifications {
                    for round in 1...3 {
                        try await Self.write(h, "s-cert", round)
                        try await Self.delivered(h, token, round)
                    }
                }
                #expect(heard.isEmpty, "the writers notified: \(heard)")
            }
        }
    }

    @Test("""
        a server that asks for a client certificate: without one, or with one from a CA it does not trust, the \
        refusal says what PostgreSQL wants; its own certificate logs in, with its key in clear or encrypted \
        (sslpassword)
        """)
    func clientCertificateRefusals() async throws {
        let cluster = try await Blocking.run { try Self.certificateCluster.get() }
        let logger = Logger(label: "test")
        func refusal(_ url: String) async -> String {
            do {
                let connector = try DatabaseConnector(url: url)
                return try await connector.withConnection(logger: logger) { _ in "connected" }
            } catch {
                return safeDescription(error)
            }
        }
        let missing = await refusal(cluster.url)
        #expect(missing.contains("connection requires a valid client certificate"), "\(missing)")
        for stranger in cluster.strangers {
            let refused = await refusal("\(cluster.url)&sslcert=\(stranger.certificate)&sslkey=\(stranger.key)")
            #expect(refused == "cannot connect to PostgreSQL: the server did not accept the relay's client "
                        + "certificate (sslcert=): it must be signed by a CA in the server's ssl_ca_file, and current",
                    "\(refused)")
        }
        #expect(await refusal("\(cluster.url)&sslcert=\(cluster.certificate)&sslkey=\(cluster.key)") == "connected")
        // The key encrypted, with its passphrase (sslpassword=).
        #expect(await refusal("\(cluster.url)&sslcert=\(cluster.certificate)&sslkey=\(cluster.encryptedKey)"
                              + "&sslpassword=\(CertificateCluster.passphrase)") == "connected")
    }
}
