import Foundation
import LiveRelayCore
import LiveRelayHTTP2Client
import NIOCore
import Synchronization

/// OAuth2 access tokens for FCM from a service account (JWT-bearer grant), shared by every worker of a relay: one
/// token is reused until shortly before its `expires_in` runs out, concurrent callers wait for the same mint, and a
/// token FCM refused (401) is replaced once.
public actor FCMAccessTokenSource {
    /// Why no access token could be had; the description never contains the key or a token.
    public struct MintError: Error, CustomStringConvertible {
        public var description: String
    }

    private let account: FCMServiceAccount
    private let http: HTTP2Client
    private let origin: HTTP2Origin
    private let path: String
    private var current: (token: String, refreshAt: ContinuousClock.Instant)?
    private var minting: Task<(token: String, lifetime: Double, requested: ContinuousClock.Instant), any Error>?
    private let minted = Mutex(0)

    public init(account: FCMServiceAccount, caFile: String?) throws {
        self.account = account
        self.http = try HTTP2Client(caFile: caFile, limits: .init(silenceSeconds: 10, batchSeconds: 20))
        guard let url = URLComponents(string: account.tokenURI) else {
            throw MintError(description: "token_uri is not a URL")
        }
        var base = url
        base.path = ""
        base.query = nil
        self.origin = try HTTP2Origin(url: base.string ?? account.tokenURI)
        self.path = (url.path.isEmpty ? "/" : url.path) + (url.query.map { "?\($0)" } ?? "")
    }

    /// How many access tokens were minted (for `/metrics` and the token-reuse test).
    public nonisolated var mintCount: Int { minted.withLock { $0 } }

    /// The current access token, minted when there is none or it is about to expire.
    public func token() async throws -> String {
        if let current, ContinuousClock.now < current.refreshAt { return current.token }
        return try await mint()
    }

    /// A new token after FCM refused `rejected` (unless another caller replaced it meanwhile).
    public func refresh(rejected: String) async throws -> String {
        if let current, current.token != rejected, ContinuousClock.now < current.refreshAt { return current.token }
        if current?.token == rejected { current = nil }
        return try await mint()
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    private func mint() async throws -> String {
        let task: Task<(token: String, lifetime: Double, requested: ContinuousClock.Instant), any Error>
        if let minting {
            task = minting
        } else {
            let assertion = try OAuthAssertionJWT.make(account: account, issuedAt: Int64(Date().timeIntervalSince1970))
            let request = tokenRequest(assertion: assertion)
            let http = self.http
            task = Task {
                // The token's lifetime runs from when the endpoint issued it, which is before its answer arrives:
                // counted from the request, a slow answer cannot make the relay use a token past its end.
                let requested = ContinuousClock.now
                let (token, lifetime) = try await Self.exchange(request, on: http)
                return (token, lifetime, requested)
            }
            minting = task
            minted.withLock { $0 += 1 }
        }
        do {
            let (token, lifetime, requested) = try await task.value
            if minting == task {
                minting = nil
                // Refresh shortly before the end: 5 minutes, or a quarter of a short lifetime (a send can take a
                // while on a loaded machine).
                current = (token, requested + .seconds(lifetime - min(300, lifetime / 4)))
            }
            return token
        } catch {
            if minting == task { minting = nil }
            throw error
        }
    }

    private func tokenRequest(assertion: String) -> HTTP2Request {
        var headers = origin.headers(method: "POST", path: path)
        headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
        headers.add(name: "accept", value: "application/json")
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        return HTTP2Request(origin: origin, headers: headers, body: ByteBuffer(string: form))
    }

    private static func exchange(_ request: HTTP2Request, on http: HTTP2Client) async throws -> (String, Double) {
        guard let answer = await http.send([request]).first else { throw MintError(description: "no answer") }
        let response: HTTP2Response
        switch answer {
        case .success(let value): response = value
        case .failure(let error): throw MintError(description: "the token endpoint did not answer: \(error)")
        }
        let body = try? JSONValue(parsing: response.bodyText)
        guard response.status == 200, case .object(let fields)? = body,
              case .string(let token)? = fields["access_token"], !token.isEmpty else {
            var why = "HTTP \(response.status)"
            if case .object(let fields)? = body {
                for key in ["error", "error_description"] {
                    if case .string(let text)? = fields[key] { why += " \(text)" }
                }
            }
            throw MintError(description: "the token endpoint refused the service account's assertion (\(why))")
        }
        let lifetime: Double
        switch fields["expires_in"] {
        case .integer(let seconds)?: lifetime = Double(seconds)
        case .number(let seconds)?: lifetime = seconds
        default: lifetime = 3600
        }
        return (token, max(lifetime, 1))
    }
}
