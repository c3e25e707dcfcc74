import Crypto
import Foundation
import LiveRelayCore
import Synchronization

/// The ES256 provider token shared by every request, minted from the `.p8` key.
///
/// Apple refuses tokens older than an hour and throttles tokens renewed more often than every 20 minutes, so a token
/// is kept for `lifetime` (50 minutes) and re-minted only then, or once on `ExpiredProviderToken`.
public final class ProviderTokenSource: Sendable {
    private struct Cached {
        var token: String
        var issuedAt: Int64
    }
    private struct State {
        var privateKey: P256.Signing.PrivateKey
        var cached: Cached?
    }

    private let teamID: String
    private let keyID: String
    private let lifetimeSeconds: Int64
    private let now: @Sendable () -> Int64
    private let state: Mutex<State>
    private let mints = Mutex(0)

    /// - Parameter now: epoch seconds (injected so tests control time).
    public init(
        teamID: String, keyID: String, privateKeyPEM: String, lifetimeSeconds: Int64 = 50 * 60,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) throws {
        self.teamID = teamID
        self.keyID = keyID
        self.state = Mutex(
            State(privateKey: try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM), cached: nil))
        self.lifetimeSeconds = lifetimeSeconds
        self.now = now
    }

    /// The current token, minting one when there is none or it is `lifetime` old.
    public func token() throws -> String {
        let now = self.now()
        return try state.withLock { state in
            if let current = state.cached, now - current.issuedAt < lifetimeSeconds, now >= current.issuedAt {
                return current.token
            }
            let token = try ProviderTokenJWT.make(
                teamID: teamID, keyID: keyID, issuedAt: now, privateKey: state.privateKey)
            state.cached = Cached(token: token, issuedAt: now)
            mints.withLock { $0 += 1 }
            return token
        }
    }

    /// APNs said `rejected` expired: mint a new one, unless another request already did.
    public func refresh(rejected: String) throws -> String {
        state.withLock { state in
            if state.cached?.token == rejected { state.cached = nil }
        }
        return try token()
    }

    /// How many tokens were minted (for metrics and tests).
    public var mintCount: Int { mints.withLock { $0 } }
}
