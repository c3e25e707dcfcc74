extension StringProtocol {
    /// The text as an error sentence quotes what a client sent: whole up to 80 characters, else its first 80 and "…"
    /// (a sentence is for a person, and a query string or path can be kilobytes long), control characters written
    /// out as `\u{1B}` (a quoted NUL would make the sentence one no database or schema accepts, and a line break or
    /// escape sequence would reach whatever shows it).
    public var excerpt: String {
        let shown = count > 80 ? prefix(80) + "…" : String(self)
        let isControl = { (scalar: Unicode.Scalar) in scalar.properties.generalCategory == .control }
        guard shown.unicodeScalars.contains(where: isControl) else { return shown }
        return shown.unicodeScalars.map { scalar in
            isControl(scalar) ? "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" : String(scalar)
        }.joined()
    }
}
