import Foundation
import LiveRelayDevSupport
import LiveRelayPostgres
import LiveRelayTestSupport
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

    @Test("a client certificate: sslcert and sslkey go together, are read at start-up, and must be a pair")
    func clientCertificate() throws {
        let folder = NSTemporaryDirectory() + "liverelay-db-client-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let authority = try SimulatorCertificate.generate()
        let client = try authority.clientCertificate(user: "relay")
        let other = try authority.clientCertificate(user: "relay")
        for (name, pem) in [("c.pem", client.certificatePEM), ("k.pem", client.keyPEM), ("o.pem", other.keyPEM)] {
            try Data(pem.utf8).write(to: URL(fileURLWithPath: folder + name))
        }
        let base = "postgres://relay@db/app?sslmode=verify-full"
        #expect(try DatabaseConnector(url: "\(base)&sslcert=\(folder)c.pem&sslkey=\(folder)k.pem")
            .replicationTLS?.required == true)
        #expect(Self.problem("\(base)&sslcert=\(folder)c.pem")
            == "DATABASE_URL has sslcert= without sslkey= (name the client certificate's key file)")
        #expect(Self.problem("\(base)&sslkey=\(folder)k.pem")
            == "DATABASE_URL has sslkey= without sslcert= (name the client certificate's file)")
        #expect(Self.problem("\(base)&sslcert=\(folder)none.pem&sslkey=\(folder)k.pem")
            == "DATABASE_URL has sslcert=\(folder)none.pem, which is not a readable PEM file")
        #expect(Self.problem("\(base)&sslcert=\(folder)c.pem&sslkey=\(folder)c.pem")
            == "DATABASE_URL has sslkey=\(folder)c.pem, which is not a readable PEM private key")
        #expect(Self.problem("\(base)&sslcert=\(folder)c.pem&sslkey=\(folder)o.pem")
            == "DATABASE_URL has an sslkey= that is not the key of sslcert='s certificate")
    }

    @Test("""
        an encrypted sslkey (PKCS #8's, and OpenSSL's older format) is read with sslpassword; without it, or with \
        another passphrase, the refusal says so and never repeats the passphrase
        """)
    func encryptedKey() throws {
        let folder = NSTemporaryDirectory() + "liverelay-db-key-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let client = try SimulatorCertificate.generate().clientCertificate(user: "relay")
        try Data(client.certificatePEM.utf8).write(to: URL(fileURLWithPath: folder + "c.pem"))
        try Data(client.keyPEM.utf8).write(to: URL(fileURLWithPath: folder + "k.pem"))
        // A passphrase with characters a URL must escape (%2F is "/", %26 "&", %20 " ").
        let passphrase = "s3cret/& word"
        let escaped = "s3cret%2F%26%20word"
        for (name, encryption) in [("p8.pem", SimulatorCertificate.KeyEncryption.pkcs8),
                                   ("old.pem", .openSSLTraditional)] {
            let pem = try SimulatorCertificate.encrypt(keyPEM: client.keyPEM, passphrase: passphrase, as: encryption)
            try Data(pem.utf8).write(to: URL(fileURLWithPath: folder + name))
        }
        #expect(try String(contentsOfFile: folder + "p8.pem", encoding: .utf8).contains("BEGIN ENCRYPTED PRIVATE KEY"))
        #expect(try String(contentsOfFile: folder + "old.pem", encoding: .utf8).contains("Proc-Type: 4,ENCRYPTED"))
        let base = "postgres://relay@db/app?sslmode=require&sslcert=\(folder)c.pem"
        for key in ["p8.pem", "old.pem"] {
            let url = "\(base)&sslkey=\(folder)\(key)"
            #expect(try DatabaseConnector(url: url + "&sslpassword=" + escaped).replicationTLS?.required == true)
            #expect(Self.problem(url)
                == "DATABASE_URL has sslkey=\(folder)\(key), which is encrypted: give its passphrase as sslpassword=")
            let wrong = Self.problem(url + "&sslpassword=not-it")
            #expect(wrong == "DATABASE_URL has sslkey=\(folder)\(key), which sslpassword= does not decrypt")
        }
        // A key that is not encrypted ignores sslpassword, as libpq does; a passphrase with no key is a mistake.
        #expect(Self.problem("\(base)&sslkey=\(folder)k.pem&sslpassword=unused") == nil)
        #expect(Self.problem("postgres://relay@db/app?sslmode=require&sslpassword=" + escaped)
            == "DATABASE_URL has sslpassword= without sslcert= and sslkey= (it is the passphrase of sslkey='s file)")
    }
}
