import Crypto
import Foundation

/// `LiveRelay-Signature: t=<unix seconds>,v1=<lowercase hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
public enum WebhookSignature {
    public static let headerName = "LiveRelay-Signature"
    public static let eventIDHeaderName = "LiveRelay-Event-Id"

    /// The header value for a body sent at `timestamp`.
    public static func header(secret: String, timestamp: Int64, body: [UInt8]) -> String {
        "t=\(timestamp),v1=\(hexString(mac(secret: secret, timestamp: timestamp, body: body)))"
    }

    /// What a receiver does: parses the header, recomputes the MAC, compares in constant time and checks the
    /// timestamp is within `tolerance` seconds of `now`.
    public static func verify(header: String, secret: String, body: [UInt8], now: Int64, tolerance: Int64 = 300)
        -> Bool {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1" { signatures.append(pair[1]) }
        }
        guard let timestamp, abs(now - timestamp) <= tolerance else { return false }
        let expected = Array(hexString(mac(secret: secret, timestamp: timestamp, body: body)).utf8)
        return signatures.contains { constantTimeEquals(Array($0.utf8), expected) }
    }

    private static func mac(secret: String, timestamp: Int64, body: [UInt8]) -> HashedAuthenticationCode<SHA256> {
        var message = Array("\(timestamp).".utf8)
        message += body
        return HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Array(secret.utf8)))
    }
}
