import Crypto
import Foundation

/// The ES256 JSON Web Token APNs expects in `authorization: bearer …` (token-based provider authentication).
public enum ProviderTokenJWT {
    /// Signs a token for `teamID`/`keyID` issued at `issuedAt` (epoch seconds).
    public static func make(
        teamID: String, keyID: String, issuedAt: Int64, privateKey: P256.Signing.PrivateKey
    ) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(keyID)"}"#
        let claims = #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#
        let signingInput = base64URL(Data(header.utf8)) + "." + base64URL(Data(claims.utf8))
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + base64URL(signature.rawRepresentation)
    }

    static func base64URL(_ data: Data) -> String { base64URLEncoded(data) }
}
