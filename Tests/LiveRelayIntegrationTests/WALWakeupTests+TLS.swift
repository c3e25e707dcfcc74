import Foundation
import LiveRelayDevSupport
import LiveRelayPostgres
import Logging
import PostgresNIO
import Testing

extension WALWakeupTests {
    /// A cluster that accepts nothing but TLS with a password (only `hostssl` lines with `password`, so a
    /// clear-text password and a connection without TLS are both refused), shared by the tests that need one: its URL
    /// with `sslmode=` left to each (its certificate, for 127.0.0.1, signed by the CA in `caFile`).
    static let tlsCluster = Result { try tlsOnlyCluster() }

    static func tlsOnlyCluster() throws -> (url: String, caFile: String) {
        let postgres = try TestCluster.make(name: "tls")
        try postgres.createDatabase("tls")
        let password = UUID().uuidString
        try postgres.runServerBinary("psql", [
            "-h", "127.0.0.1", "-p", "\(postgres.port)", "-U", "postgres", "-d", "postgres", "-c",
            "ALTER ROLE postgres PASSWORD '\(password)'",
        ])
        let certificate = try SimulatorCertificate.generate()
        try serveOnlyTLS(postgres, certificate: certificate, login: "password")
        let caFile = TestCluster.base + "/tls-ca-\(UUID().uuidString.prefix(8)).pem"
        try Data(certificate.caPEM.utf8).write(to: URL(fileURLWithPath: caFile))
        return ("postgres://postgres:\(password)@127.0.0.1:\(postgres.port)/tls?sslmode=", caFile)
    }

    /// Restarts `postgres` serving `certificate`'s leaf, accepting only `hostssl` lines (sessions and replication)
    /// with the `login` method; `settings` are added to postgresql.conf after `ssl = on`.
    static func serveOnlyTLS(_ postgres: LocalPostgres, certificate: SimulatorCertificate, login: String,
                             settings: String = "") throws {
        let folder = postgres.dataDirectory
        try Data(certificate.leafPEM.utf8).write(to: URL(fileURLWithPath: folder + "/server.crt"))
        try Data(certificate.leafKeyPEM.utf8).write(to: URL(fileURLWithPath: folder + "/server.key"))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: folder + "/server.key")
        try Data("""
            hostssl all all 127.0.0.1/32 \(login)
            hostssl replication all 127.0.0.1/32 \(login)

            """.utf8).write(to: URL(fileURLWithPath: folder + "/pg_hba.conf"))
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/postgresql.conf"))
        file.seekToEndOfFile()
        file.write(Data("ssl = on\n\(settings)".utf8))
        try file.close()
        try postgres.handOverToServerUser(folder)
        try postgres.restart()
    }

    @Test("""
        sslmode=verify-full: the replication connection speaks TLS (logging in with a clear-text password, which only \
        TLS may carry), and writes wake the relay from the log without NOTIFY
        """)
    func overTLS() async throws {
        let cluster = try await Blocking.run { try Self.tlsCluster.get() }
        let url = cluster.url + "verify-full&sslrootcert=" + cluster.caFile
        try await Harness.with(databaseURL: url) { h in
            try await h.withRelay(environment: Self.pollOff) {
                try await h.waitUntil("SELECT bool_and(reads_wal AND NOT idle) FROM relay_wakeup")
                // This relay's walsender, named after its gate row, is encrypted.
                let encrypted = try await h.rows("""
                    SELECT s.ssl FROM pg_stat_replication r JOIN relay_wakeup w
                    ON r.application_name = 'liverelay-wal-' || left(w.instance_id::text, 8)
                    JOIN pg_stat_ssl s ON s.pid = r.pid
                    """, as: Bool.self)
                #expect(encrypted == [true])
                let token = try await h.registerActivity(session: "s-tls")
                let heard = try await h.wakeUpNotifications {
                    for round in 1...3 {
                        try await Self.write(h, "s-tls", round)
                        try await Self.delivered(h, token, round)
                    }
                }
                #expect(heard.isEmpty, "the writers notified: \(heard)")
            }
        }
    }

    @Test("""
        a self-signed server certificate, as libpq: require and prefer connect; verify-ca and verify-full refuse it \
        without its CA, saying so, and accept it with sslrootcert
        """)
    func certificateChecks() async throws {
        let cluster = try await Blocking.run { try Self.tlsCluster.get() }
        let logger = Logger(label: "test")
        func answer(_ mode: String) async -> String {
            do {
                let connector = try DatabaseConnector(url: cluster.url + mode)
                return try await connector.withConnection(logger: logger) { connection in
                    let rows = try await connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                                                          logger: logger)
                    for try await encrypted in rows.decode(Bool.self) { return encrypted ? "encrypted" : "clear" }
                    return "no row"
                }
            } catch {
                return safeDescription(error)
            }
        }
        #expect(await answer("require") == "encrypted")
        #expect(await answer("prefer") == "encrypted")
        for mode in ["verify-ca", "verify-full"] {
            let refusal = await answer(mode)
            #expect(refusal.hasPrefix("cannot connect to PostgreSQL: the server's TLS certificate was not accepted")
                        && refusal.hasSuffix("sslrootcert= in DATABASE_URL"), "\(mode): \(refusal)")
            #expect(await answer(mode + "&sslrootcert=" + cluster.caFile) == "encrypted")
        }
        #expect(await answer("disable").contains("no pg_hba.conf entry"))
    }
}
