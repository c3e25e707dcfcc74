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
        if let wrong = Self.firstCharacter(of: text, outside: ".-_") {
            throw APIError.badRequest("""
                \(name) holds \(wrong); a bundle id is letters, digits, '.', '-' and '_' (like com.example.app)
                """)
        }
        return text
    }

    static func checkedToken(_ text: String, named name: String) throws -> String {
        if let wrong = firstCharacter(of: text, outside: "._~:-") {
            throw APIError.badRequest("""
                \(name) holds \(wrong), which no APNs or FCM token does: a token is letters, digits and \
                '.', '_', '~', ':', '-' (APNs tokens in hex, FCM tokens as Firebase gave them)
                """)
        }
        return text
    }

    /// The first character of `text` that is not an ASCII letter, digit or one of `others`, as a sentence can show
    /// it: quoted when printable, by code point otherwise (a space, a line break).
    static func firstCharacter(of text: String, outside others: String) -> String? {
        guard let wrong = text.first(where: { !($0.isASCII && ($0.isLetter || $0.isNumber || others.contains($0))) })
        else { return nil }
        guard let scalar = wrong.unicodeScalars.first, scalar.isASCII, scalar.value > 0x20, scalar.value != 0x7F else {
            return String(format: "U+%04X", wrong.unicodeScalars.first?.value ?? 0)
        }
        return "'\(wrong)'"
    }
}
