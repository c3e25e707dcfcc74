import Foundation
import Hummingbird
import LiveRelayCore
import NIOCore

extension FCMSimulator {
    /// `POST /token`: Google's JWT-bearer grant. Verifies the assertion's RS256 signature and claims and issues an
    /// access token; errors as Google's token endpoint gives them (`{"error", "error_description"}`).
    func handleToken(_ request: Request) async -> Response {
        func refuse(_ error: String, _ description: String) -> Response {
            state.withLock { $0.responses["token-400", default: 0] += 1 }
            if printMessages { say("fcm-sim: token refused: \(description)") }
            let body = JSONValue.object(["error": .string(error), "error_description": .string(description)])
            return Response(status: .badRequest, headers: [.contentType: "application/json; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: body.compactBytes)))
        }
        guard let body = try? await request.body.collect(upTo: 16 * 1024) else {
            return refuse("invalid_request", "the body is larger than 16 KB")
        }
        guard request.headers[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true else {
            return refuse("invalid_request", "the body must be application/x-www-form-urlencoded")
        }
        var form: [String: String] = [:]
        for pair in String(buffer: body).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            let value = parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? parts[1]
            form[parts[0].removingPercentEncoding ?? parts[0]] = value
        }
        guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return refuse("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"] else {
            return refuse("invalid_request", "Missing required parameter: assertion")
        }
        let claims: OAuthAssertion
        do {
            claims = try OAuthAssertion(verifying: assertion, key: publicKey)
        } catch {
            return refuse("invalid_grant", "Invalid JWT Signature.")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let (tokenURI, lifetime) = state.withLock { ($0.tokenURI, $0.faults.accessTokenLifetimeSeconds) }
        if claims.issuer != credentials.clientEmail {
            return refuse("invalid_grant", "Invalid issuer: \(claims.issuer) is not the service account")
        }
        if claims.audience != tokenURI {
            return refuse("invalid_grant", "Invalid JWT: aud \(claims.audience) is not \(tokenURI)")
        }
        if !claims.scope.split(separator: " ").contains(Substring(OAuthAssertion.firebaseMessagingScope)) {
            return refuse("invalid_scope", "the scope does not include firebase.messaging")
        }
        if claims.expiresAt - claims.issuedAt > 3600 || claims.expiresAt <= claims.issuedAt {
            return refuse("invalid_grant", "Invalid JWT: exp must be after iat and at most an hour later")
        }
        if claims.expiresAt < now || claims.issuedAt > now + 300 {
            return refuse("invalid_grant",
                          "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe")
        }
        let token = "ya29.sim-" + randomHex(bytes: 24)
        let issued = Date().timeIntervalSince1970
        state.withLock { state in
            state.assertions.append(claims)
            state.accessTokens[token] = AccessToken(issuedAt: issued, expiresAt: issued + Double(lifetime))
            state.responses["token-200", default: 0] += 1
        }
        if printMessages { say("fcm-sim: issued an access token to \(claims.issuer) (kid \(claims.keyID))") }
        let answer = JSONValue.object([
            "access_token": .string(token), "expires_in": .integer(Int64(lifetime)), "token_type": .string("Bearer"),
        ])
        return Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: answer.compactBytes)))
    }
}
