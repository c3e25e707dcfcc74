import Crypto
import Foundation
import _CryptoExtras
import LiveRelayCore
import LiveRelayDevSupport
import Testing

/// The simulators' own JWT reading refuses what a push service refuses: another algorithm, a changed claim, parts
/// that are not base64url JSON.
@Suite("Simulators' JWT verifier")
struct SimulatorJWTTests {
    let key = P256.Signing.PrivateKey()
    static let claims = ProviderTokenClaims.self

    func token() throws -> String {
        try ProviderTokenJWT.make(teamID: "T", keyID: "K", issuedAt: 1_800_000_000, privateKey: key)
    }

    @Test("a token changed after signing does not verify")
    func tampered() throws {
        var pieces = try token().split(separator: ".").map(String.init)
        let forged = #"{"iss":"OTHER","iat":1800000000}"#
        pieces[1] = Data(forged.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "").replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
        #expect(throws: SimulatorJWT.Failure.badSignature) {
            try SimulatorJWT.verifyES256(pieces.joined(separator: "."), key: key.publicKey, claims: Self.claims)
        }
    }

    @Test("another algorithm, missing parts or characters outside base64url are malformed")
    func malformed() throws {
        let token = try token()
        let none = Data(#"{"alg":"none","kid":"K"}"#.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
        let pieces = token.split(separator: ".").map(String.init)
        for bad in [none + "." + pieces[1] + ".", pieces[0] + "." + pieces[1], token + "!", "a.b.c"] {
            #expect(throws: SimulatorJWT.Failure.malformed) {
                try SimulatorJWT.verifyES256(bad, key: key.publicKey, claims: Self.claims)
            }
        }
        #expect(throws: SimulatorJWT.Failure.malformed, "an ES256 token read as RS256") {
            try SimulatorJWT.verifyRS256(token, key: _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey,
                                         claims: Self.claims)
        }
    }
}
