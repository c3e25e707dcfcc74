import _CryptoExtras
import LiveRelayDevSupport

/// Google's OAuth JWT-bearer assertion as its token endpoint reads it: RS256, the key id in the header, issuer,
/// scope, audience and times in the claims, verified with the simulator's own verifier (not the relay's code).
struct OAuthAssertion: Sendable, Hashable {
    /// The scope FCM HTTP v1 requires, as Google names it.
    static let firebaseMessagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    var keyID: String
    var issuer: String
    var scope: String
    var audience: String
    var issuedAt: Int64
    var expiresAt: Int64

    private struct Claims: Decodable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }

    /// Throws `SimulatorJWT.Failure` when the assertion is malformed or its signature does not verify with `key`.
    init(verifying jwt: String, key: _RSA.Signing.PublicKey) throws {
        let (keyID, claims) = try SimulatorJWT.verifyRS256(jwt, key: key, claims: Claims.self)
        self.keyID = keyID
        issuer = claims.iss
        scope = claims.scope
        audience = claims.aud
        issuedAt = claims.iat
        expiresAt = claims.exp
    }
}
