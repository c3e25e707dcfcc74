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
}
