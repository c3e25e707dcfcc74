import _CryptoExtras
import Crypto
import Foundation

/// The RS256 JSON Web Token of Google's JWT-bearer grant (a service account asking its `token_uri` for an access
/// token). Signed with swift-crypto's RSA (PKCS#1 v1.5 with SHA-256, which is what RS256 is).
public enum OAuthAssertionJWT {
    /// The scope FCM HTTP v1 needs.
    public static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The longest lifetime Google accepts for an assertion.
    public static let lifetimeSeconds: Int64 = 3600

    /// The claims of an assertion.
    public struct Claims: Sendable, Hashable {
        public var keyID: String
        public var issuer: String
        public var scope: String
        public var audience: String
        public var issuedAt: Int64
        public var expiresAt: Int64
    }

    /// Why an assertion was refused.
    public enum VerificationError: Error, Hashable {
        case malformed
        case badSignature
    }

    /// Signs an assertion for `account`, issued at `issuedAt` (epoch seconds), valid for an hour.
    public static func make(account: FCMServiceAccount, issuedAt: Int64) throws -> String {
        let key = try _RSA.Signing.PrivateKey(pemRepresentation: account.privateKeyPEM)
        let header = JSONValue.object([
            "alg": .string("RS256"), "typ": .string("JWT"), "kid": .string(account.privateKeyID),
        ])
        let claims = JSONValue.object([
            "iss": .string(account.clientEmail), "scope": .string(firebaseMessagingScope),
            "aud": .string(account.tokenURI), "iat": .integer(issuedAt), "exp": .integer(issuedAt + lifetimeSeconds),
        ])
        let signingInput = base64URLEncoded(Data(header.compactBytes)) + "."
            + base64URLEncoded(Data(claims.compactBytes))
        let signature = try key.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
        return signingInput + "." + base64URLEncoded(signature.rawRepresentation)
    }

    /// Verifies an assertion's RS256 signature and returns its claims.
    public static func verify(_ token: String, publicKey: _RSA.Signing.PublicKey) throws -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
              let headerData = ProviderTokenJWT.decodeBase64URL(String(parts[0])),
              let claimsData = ProviderTokenJWT.decodeBase64URL(String(parts[1])),
              let signatureData = ProviderTokenJWT.decodeBase64URL(String(parts[2])),
              case .object(let header)? = try? JSONValue(parsing: String(decoding: headerData, as: UTF8.self)),
              case .object(let claims)? = try? JSONValue(parsing: String(decoding: claimsData, as: UTF8.self)),
              header["alg"] == .string("RS256"),
              case .string(let keyID)? = header["kid"],
              case .string(let issuer)? = claims["iss"],
              case .string(let scope)? = claims["scope"],
              case .string(let audience)? = claims["aud"],
              case .integer(let issuedAt)? = claims["iat"],
              case .integer(let expiresAt)? = claims["exp"]
        else { throw VerificationError.malformed }
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signatureData)
        let signed = Data((parts[0] + "." + parts[1]).utf8)
        guard publicKey.isValidSignature(signature, for: signed, padding: .insecurePKCS1v1_5) else {
            throw VerificationError.badSignature
        }
        return Claims(keyID: keyID, issuer: issuer, scope: scope, audience: audience, issuedAt: issuedAt,
                      expiresAt: expiresAt)
    }
}
