import Crypto
import LiveRelayDevSupport

/// A provider token as APNs reads it: an ES256 JWT with the key id in its header and the team id and issue time in
/// its claims, verified with the simulator's own verifier (not the relay's signing code).
struct ProviderToken: Sendable, Hashable {
    var keyID: String
    var teamID: String
    var issuedAt: Int64

    private struct Claims: Decodable {
        var iss: String
        var iat: Int64
    }

    /// Nil when the token is malformed or its signature does not verify with `key`.
    init?(verifying jwt: String, key: P256.Signing.PublicKey) {
        guard let (keyID, claims) = try? SimulatorJWT.verifyES256(jwt, key: key, claims: Claims.self) else {
            return nil
        }
        self.init(keyID: keyID, teamID: claims.iss, issuedAt: claims.iat)
    }

    init(keyID: String, teamID: String, issuedAt: Int64) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }
}
