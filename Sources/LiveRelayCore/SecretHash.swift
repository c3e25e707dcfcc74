import Crypto
import Foundation

/// The lowercase hex SHA-256 of a pairing secret, as stored in `secret_hash`.
public func secretHash(_ secret: String) -> String {
    sha256Hex(secret)
}

/// Lowercase hex SHA-256 of a text's UTF-8 bytes.
public func sha256Hex(_ text: String) -> String {
    hexString(SHA256.hash(data: Data(text.utf8)))
}

/// Lowercase hex of any bytes.
public func hexString<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    // Two table lookups per byte into one buffer (a String per byte, joined, was 4% of the relay's CPU per push).
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        out.append(lowercaseHexDigits[Int(byte >> 4)])
        out.append(lowercaseHexDigits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// The sixteen lowercase hex digits, as bytes.
let lowercaseHexDigits = Array("0123456789abcdef".utf8)

/// Base64url without padding (JWTs, signed device tokens).
public func base64URLEncoded(_ data: Data) -> String {
    data.base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// `count` random bytes as lowercase hex.
public func randomHex(bytes count: Int) -> String {
    hexString((0..<count).map { _ in UInt8.random(in: 0...255) })
}

/// Compares two byte strings in time that depends only on their lengths.
public func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
    guard lhs.count == rhs.count else { return false }
    var difference: UInt8 = 0
    for (left, right) in zip(lhs, rhs) { difference |= left ^ right }
    return difference == 0
}

/// The last characters of a token, for logs and the delivery log; never the whole token.
public func redactedToken(_ token: String) -> String {
    token.count <= 8 ? "…" : "…" + token.suffix(8)
}
