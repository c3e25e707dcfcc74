import Crypto
import Foundation

/// The ES256 JSON Web Token APNs expects in `authorization: bearer …` (token-based provider authentication).
public enum ProviderTokenJWT {
    /// Signs a token for `teamID`/`keyID` issued at `issuedAt` (epoch seconds).
    public static func make(teamID: String, keyID: String, issuedAt: Int64, privateKey: P256.Signing.PrivateKey) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#
        let signingInput = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + base64URL(signature.rawRepresentation)
    }

    /// The parts of a verified token.
    public struct Claims: Sendable, Hashable {
        public var keyID: String
        public var teamID: String
        public var issuedAt: Int64
    }

    /// Why a token was refused.
    public enum VerificationError: Error, Hashable {
        case malformed
        case badSignature
    }

    /// Verifies an ES256 token's signature and returns its claims.
    public static func verify(_ token: String, publicKey: P256.Signing.PublicKey) throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerData = decodeBase64URL(String(parts[0])),
              let claimsData = decodeBase64URL(String(parts[1])),
              let signatureData = decodeBase64URL(String(parts[2])),
              case .object(let header)? = try? JSONDecoder().decode(JSONValue.self, from: headerData),
              case .object(let claims)? = try? JSONDecoder().decode(JSONValue.self, from: claimsData),
              header["alg"] == .string("ES256"),
              case .string(let keyID)? = header["kid"],
              case .string(let teamID)? = claims["iss"],
              case .integer(let issuedAt)? = claims["iat"]
        else { throw VerificationError.malformed }
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
              publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        else { throw VerificationError.badSignature }
        return Claims(keyID: keyID, teamID: teamID, issuedAt: issuedAt)
    }

    static func base64URL(_ data: Data) -> String { base64URLEncoded(data) }

    static func decodeBase64URL(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
