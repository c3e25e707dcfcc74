import Foundation
import LiveRelayDevSupport
import LiveRelayPostgres
import LiveRelayWAL
import Testing

/// `DATABASE_URL`'s TLS settings, for the relay's sessions and its replication connection alike.
@Suite("DATABASE_URL")
struct DatabaseURLTests {
    static func problem(_ url: String) -> String? {
        do {
            _ = try DatabaseConnector(url: url)
            return nil
        } catch {
            return String(describing: error)
        }
    }

    @Test("an unknown sslmode, and an sslrootcert that cannot be read, are refused with what to change")
    func refused() {
        #expect(Self.problem("postgres://u@db:5432/app?sslmode=sometimes")
            == "DATABASE_URL has an unknown sslmode sometimes (use disable, prefer, require, verify-ca or verify-full)")
        #expect(Self.problem("postgres://u@db:5432/app?sslmode=require&sslrootcert=/nonexistent/ca.pem")
            == "DATABASE_URL has sslrootcert=/nonexistent/ca.pem, which is not a readable PEM file")
    }

    @Test("the replication connection follows sslmode, naming the server only when the URL names a host")
    func replicationFollowsSSLMode() throws {
        let caFile = NSTemporaryDirectory() + "liverelay-db-ca-\(UUID().uuidString).pem"
        try Data(try SimulatorCertificate.generate().caPEM.utf8).write(to: URL(fileURLWithPath: caFile))
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let named = try DatabaseConnector(url: "postgres://u@db.internal/app?sslmode=require&sslrootcert=\(caFile)")
        #expect(named.replicationTLS?.required == true)
        #expect(named.replicationTLS?.serverName == "db.internal")
        let address = try DatabaseConnector(url: "postgres://u@10.0.0.7/app").replicationTLS
        #expect(address?.required == false, "no sslmode is prefer")
        #expect(address != nil && address?.serverName == nil)
        #expect(try DatabaseConnector(url: "postgres://u@db/app?sslmode=disable").replicationTLS == nil)
    }
}
