import Crypto
import _CryptoExtras
import Foundation

/// Reads and verifies a JSON Web Token as the push services do, for the simulators and the tests: its own small
/// implementation (Foundation's JSON decoder, swift-crypto's signatures), sharing nothing with the relay's signing
/// code, so that a bug there cannot be mirrored here and pass unnoticed.
public enum SimulatorJWT {
    public enum Failure: Error, Hashable {
        /// Not three base64url parts of JSON, or a header, claim or algorithm missing or of the wrong type.
        case malformed
        case badSignature
    }

    /// An ES256 token (APNs provider tokens): the header's key id, and the claims decoded as `Claims`.
    public static func verifyES256<Claims: Decodable>(
        _ token: String, key: P256.Signing.PublicKey, claims: Claims.Type
    ) throws -> (keyID: String, claims: Claims) {
        let parts = try split(token, algorithm: "ES256")
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: parts.signature),
              key.isValidSignature(signature, for: parts.signed) else { throw Failure.badSignature }
        return (parts.keyID, try decode(Claims.self, parts.claims))
    }

    /// An RS256 token (Google's OAuth JWT-bearer assertions).
    public static func verifyRS256<Claims: Decodable>(
        _ token: String, key: _RSA.Signing.PublicKey, claims: Claims.Type
    ) throws -> (keyID: String, claims: Claims) {
        let parts = try split(token, algorithm: "RS256")
        let signature = _RSA.Signing.RSASignature(rawRepresentation: parts.signature)
        guard key.isValidSignature(signature, for: parts.signed, padding: .insecurePKCS1v1_5) else {
            throw Failure.badSignature
        }
        return (parts.keyID, try decode(Claims.self, parts.claims))
    }

    /// The header both services require: the algorithm and the signing key's id.
    private struct Header: Decodable {
        var alg: String
        var kid: String
    }

    private static func split(_ token: String, algorithm: String) throws
        -> (keyID: String, claims: Data, signature: Data, signed: Data) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let header = base64URL(parts[0]), let claims = base64URL(parts[1]),
              let signature = base64URL(parts[2]) else { throw Failure.malformed }
        let decoded = try decode(Header.self, header)
        guard decoded.alg == algorithm else { throw Failure.malformed }
        return (decoded.kid, claims, signature, Data("\(parts[0]).\(parts[1])".utf8))
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        do { return try JSONDecoder().decode(type, from: data) } catch { throw Failure.malformed }
    }

    private static func base64URL(_ text: String) -> Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            return nil
        }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
