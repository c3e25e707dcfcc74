import Foundation
import LiveRelayDevSupport

extension SimulatorCertificate {
    /// How a private key's PEM is encrypted.
    public enum KeyEncryption: Sendable, CaseIterable {
        /// PKCS #8's `ENCRYPTED PRIVATE KEY` (AES-256-CBC): what `openssl pkcs8 -topk8` and most tools write now.
        case pkcs8
        /// OpenSSL's older form, `Proc-Type: 4,ENCRYPTED` inside `EC PRIVATE KEY`: what `openssl ec -aes256` writes.
        case openSSLTraditional
    }

    /// `keyPEM` (an EC key, as `clientCertificate(user:)` makes) encrypted with `passphrase`, for tests of
    /// `sslpassword=`. Runs the `openssl` command line tool (`scripts/test` installs it where it is missing).
    public static func encrypt(keyPEM: String, passphrase: String, as encryption: KeyEncryption) throws -> String {
        let folder = NSTemporaryDirectory() + "liverelay-key-\(UUID().uuidString)/"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (plain, encrypted, output) = (folder + "key.pem", folder + "encrypted.pem", folder + "openssl.log")
        try Data(keyPEM.utf8).write(to: URL(fileURLWithPath: plain))
        let command = switch encryption {
        case .pkcs8: ["pkcs8", "-topk8", "-v2", "aes-256-cbc"]
        case .openSSLTraditional: ["ec", "-aes256"]
        }
        let status = try ChildProcess.run(
            "/usr/bin/env", ["openssl"] + command + ["-in", plain, "-out", encrypted, "-passout", "pass:" + passphrase],
            outputPath: output)
        guard status == 0, let pem = FileManager.default.contents(atPath: encrypted) else {
            let said = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            throw EncryptionFailure(description: "openssl \(command[0]) ended with status \(status): \(said)")
        }
        return String(decoding: pem, as: UTF8.self)
    }

    struct EncryptionFailure: Error, CustomStringConvertible {
        var description: String
    }
}
