import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore

/// Who a request is: the admin, a device (signed device token), or the holder of a pairing secret.
struct Caller: Sendable {
    var isAdmin = false
    var deviceUUID: UUID?
    var secretHash: String?
    /// Why a bearer token that was given was not taken (`expired` or `invalid`), so that a 401 can say it (RFC 6750's
    /// `invalid_token`).
    var rejectedBearer: DeviceTokenCheck?
}

/// What a bearer token's check as a device token found.
enum DeviceTokenCheck: Sendable, Equatable {
    case valid(UUID)
    /// A device token this relay signed, past its expiry (epoch seconds).
    case expired(device: UUID, at: Int64)
    /// Neither the admin token nor a device token with this relay's signature.
    case invalid
}

/// Checks bearer tokens and mints device tokens (`lrd1.<uuid>.<expiry>.<HMAC-SHA256>`).
public struct Authenticator: Sendable {
    let adminToken: String?
    /// SHA-256 of the token secret, the HMAC key.
    let tokenKeyBytes: [UInt8]
    var tokenKey: SymmetricKey { SymmetricKey(data: tokenKeyBytes) }

    public init(adminToken: String?, tokenSecret: String) {
        self.adminToken = adminToken
        self.tokenKeyBytes = Array(SHA256.hash(data: Data(tokenSecret.utf8)))
    }

    /// Reads `Authorization: Bearer`, `access_token=` and `X-Relay-Secret`.
    func caller(for request: Request) -> Caller {
        var caller = Caller()
        var bearer: String?
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") {
            bearer = String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        } else if let token = request.uri.queryParameters.get("access_token") {
            bearer = token
        }
        if let bearer {
            if let adminToken, constantTimeEquals(Array(bearer.utf8), Array(adminToken.utf8)) {
                caller.isAdmin = true
            } else {
                switch checkDeviceToken(bearer) {
                case .valid(let device): caller.deviceUUID = device
                case let rejected: caller.rejectedBearer = rejected
                }
            }
        }
        if let secret = request.headers[HTTPField.Name("X-Relay-Secret")!], !secret.isEmpty {
            caller.secretHash = secretHash(secret)
        }
        return caller
    }

    /// Throws 401 unless the caller is the admin (403 when authenticated as something else).
    func requireAdmin(_ request: Request) throws {
        let caller = caller(for: request)
        guard caller.isAdmin else {
            throw caller.deviceUUID != nil || caller.secretHash != nil
                ? APIError.forbidden("this route needs the admin token") : APIError.unauthorized(caller)
        }
    }

    func mintDeviceToken(for device: UUID, lifetimeSeconds: Int64, now: Int64 = Int64(Date().timeIntervalSince1970))
        -> (token: String, expiresAt: Int64) {
        let expiry = now + lifetimeSeconds
        let body = "lrd1.\(device.uuidString.lowercased()).\(expiry)"
        return (body + "." + signature(body), expiry)
    }

    /// A token's device, or why it is not taken. Expiry is told only for a token whose signature is right.
    func checkDeviceToken(_ token: String, now: Int64 = Int64(Date().timeIntervalSince1970)) -> DeviceTokenCheck {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "lrd1", let device = UUID(uuidString: String(parts[1])),
              let expiry = Int64(parts[2]) else { return .invalid }
        let body = parts[0...2].joined(separator: ".")
        guard constantTimeEquals(Array(signature(body).utf8), Array(parts[3].utf8)) else { return .invalid }
        return expiry > now ? .valid(device) : .expired(device: device, at: expiry)
    }

    private func signature(_ body: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: Data(body.utf8), using: tokenKey)
        return base64URLEncoded(Data(mac))
    }
}
