import Crypto
import Foundation

/// The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), as PostgreSQL asks for it when a password is hashed that
/// way: three messages, the server's proof checked at the end. No channel binding (`n,,`).
struct SCRAMClient: Sendable {
    enum Failure: Error, Equatable, CustomStringConvertible {
        case malformedServerMessage
        case nonceMismatch
        case serverProofMismatch
        case serverError(String)

        var description: String {
            switch self {
            case .malformedServerMessage: "the server's SCRAM message could not be read"
            case .nonceMismatch: "the server's SCRAM nonce does not extend ours"
            case .serverProofMismatch: "the server could not prove it knows the password"
            case let .serverError(message): "the server refused the password (SCRAM: \(message))"
            }
        }
    }

    let user: String
    let password: String
    let clientNonce: String
    private var authMessage = ""
    private var saltedPassword: [UInt8] = []

    static let mechanism = "SCRAM-SHA-256"

    init(user: String = "", password: String, clientNonce: String = Self.randomNonce()) {
        self.user = user
        self.password = password
        self.clientNonce = clientNonce
    }

    static func randomNonce() -> String {
        Data((0..<18).map { _ in UInt8.random(in: .min ... .max) }).base64EncodedString()
    }

    private var clientFirstBare: String { "n=\(user),r=\(clientNonce)" }

    /// The client-first message.
    var first: String { "n,," + clientFirstBare }

    /// The client-final message, for the server-first one.
    mutating func final(answering serverFirst: String) throws(Failure) -> String {
        let fields = Self.fields(serverFirst)
        guard let nonce = fields["r"], let saltText = fields["s"], let salt = Data(base64Encoded: saltText),
              let iterationsText = fields["i"], let iterations = Int(iterationsText), iterations > 0
        else { throw .malformedServerMessage }
        guard nonce.hasPrefix(clientNonce), nonce.count > clientNonce.count else { throw .nonceMismatch }
        saltedPassword = Self.salted(password: Array(password.utf8), salt: Array(salt), iterations: iterations)
        let withoutProof = "c=biws,r=\(nonce)"
        authMessage = clientFirstBare + "," + serverFirst + "," + withoutProof
        let clientKey = Self.hmac(saltedPassword, "Client Key")
        let storedKey = Array(SHA256.hash(data: clientKey))
        let signature = Self.hmac(storedKey, authMessage)
        let proof = zip(clientKey, signature).map { $0 ^ $1 }
        return withoutProof + ",p=" + Data(proof).base64EncodedString()
    }

    /// Checks the server-final message.
    func verify(serverFinal: String) throws(Failure) {
        let fields = Self.fields(serverFinal)
        if let error = fields["e"] { throw .serverError(error) }
        guard let text = fields["v"], let proof = Data(base64Encoded: text) else { throw .malformedServerMessage }
        let expected = Self.hmac(Self.hmac(saltedPassword, "Server Key"), authMessage)
        // Constant time: every byte is compared whatever the first difference.
        guard proof.count == expected.count,
              zip(proof, expected).reduce(UInt8(0), { $0 | ($1.0 ^ $1.1) }) == 0
        else { throw .serverProofMismatch }
    }

    static func fields(_ message: String) -> [String: String] {
        var out: [String: String] = [:]
        for part in message.split(separator: ",") {
            guard let equals = part.firstIndex(of: "="), equals != part.startIndex else { continue }
            out[String(part[..<equals])] = String(part[part.index(after: equals)...])
        }
        return out
    }

    static func hmac(_ key: [UInt8], _ message: String) -> [UInt8] { hmac(key, Array(message.utf8)) }

    static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }

    /// Hi() of RFC 5802: PBKDF2 with HMAC-SHA-256, one block.
    static func salted(password: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8] {
        let key = SymmetricKey(data: password)
        var block = Array(HMAC<SHA256>.authenticationCode(for: salt + [0, 0, 0, 1], using: key))
        var result = block
        for _ in 1..<iterations {
            block = Array(HMAC<SHA256>.authenticationCode(for: block, using: key))
            for index in result.indices { result[index] ^= block[index] }
        }
        return result
    }
}
