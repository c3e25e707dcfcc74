import Foundation

/// Tokens and bundle ids that a registration stores go, later, into an APNs or FCM request: a token into the path
/// (`/3/device/<token>`) or the message, a bundle id into the `apns-topic` header. One that could never be sent is
/// refused here, naming its first wrong character, rather than stored and failed at every push.
extension BodyFields {
    /// A push token as APNs (hex) or FCM gives it: letters, digits and `. _ ~ : -` (no space, slash, `%` or control
    /// character, which no token holds and which would change the request's path).
    func pushToken(_ name: String) throws -> String {
        try Self.checkedToken(try string(name, maxLength: 512), named: name)
    }

    func optionalPushToken(_ name: String) throws -> String? {
        try optionalString(name, maxLength: 512).map { try Self.checkedToken($0, named: name) }
    }

    /// A bundle id (iOS) or application id (Android): letters, digits, `.`, `-` and `_`.
    func optionalBundleID(_ name: String) throws -> String? {
        guard let text = try optionalString(name, maxLength: 255) else { return nil }
        if let wrong = text.unicodeScalars.first(where: { !Self.isBundleCharacter($0) }) {
            throw APIError.badRequest("""
                \(name) holds \(Self.shown(wrong)); a bundle id is letters, digits, '.', '-' and '_' \
                (like com.example.app)
                """)
        }
        return text
    }

    static func checkedToken(_ text: String, named name: String) throws -> String {
        if let wrong = text.unicodeScalars.first(where: { !isTokenCharacter($0) }) {
            throw APIError.badRequest("""
                \(name) holds \(shown(wrong)), which no APNs or FCM token does: a token is letters, digits and \
                '.', '_', '~', ':', '-' (APNs tokens in hex, FCM tokens as Firebase gave them)
                """)
        }
        return text
    }

    static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        isASCIIAlphanumeric(scalar) || "._~:-".unicodeScalars.contains(scalar)
    }

    static func isBundleCharacter(_ scalar: Unicode.Scalar) -> Bool {
        isASCIIAlphanumeric(scalar) || ".-_".unicodeScalars.contains(scalar)
    }

    private static func isASCIIAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    /// A character as a sentence can show it: printable ones quoted, others (space, control) by code point.
    static func shown(_ scalar: Unicode.Scalar) -> String {
        scalar.properties.isWhitespace || scalar.value < 0x20 || scalar.value == 0x7F || !scalar.isASCII
            ? String(format: "U+%04X", scalar.value) : "'\(scalar)'"
    }
}
