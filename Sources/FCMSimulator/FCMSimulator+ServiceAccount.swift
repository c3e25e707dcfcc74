import _CryptoExtras
import Crypto
import Foundation
import LiveRelayCore

extension FCMSimulator {
    /// The e-mail of the service account the simulator trusts (as Google names them).
    public static func clientEmail(projectID: String) -> String {
        "liverelay-dev@\(projectID).iam.gserviceaccount.com"
    }

    /// A Google service-account key file for `key` whose `token_uri` is the simulator's token endpoint.
    public static func serviceAccountJSON(key: _RSA.Signing.PrivateKey, projectID: String, tokenURI: String) -> String {
        let keyID = hexString(Array(SHA256.hash(data: key.publicKey.derRepresentation)).prefix(20))
        let account = JSONValue.object([
            "type": .string("service_account"),
            "project_id": .string(projectID),
            "private_key_id": .string(keyID),
            "private_key": .string(key.pkcs8PEMRepresentation),
            "client_email": .string(clientEmail(projectID: projectID)),
            "client_id": .string("100000000000000000001"),
            "auth_uri": .string("https://accounts.google.com/o/oauth2/auth"),
            "token_uri": .string(tokenURI),
        ])
        return account.compactText
    }

    /// The credentials that accept what `serviceAccountJSON` describes.
    public static func credentials(key: _RSA.Signing.PrivateKey, projectID: String, tokenURI: String) -> Credentials {
        Credentials(publicKeyPEM: key.publicKey.pemRepresentation, clientEmail: clientEmail(projectID: projectID),
                    tokenURI: tokenURI, projectID: projectID)
    }
}
