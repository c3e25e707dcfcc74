import Foundation

/// Reads settings from the environment, each refusal a `ConfigurationError` naming the variable: a blank value counts
/// as unset, and a `*_FILE` variable may stand for the text of a key.
struct EnvironmentReader {
    private let environment: [String: String]
    private let files: any ConfigurationFiles
    /// The refusals `keep` has collected, in the order the settings were read.
    private(set) var problems: [ConfigurationError] = []

    init(_ environment: [String: String], files: any ConfigurationFiles) {
        self.environment = environment
        self.files = files
    }

    /// What `read` gives, or `fallback` when it refuses a setting. The refusal is kept rather than thrown, so that
    /// start-up names every bad setting at once instead of one per restart.
    mutating func keep<T>(_ fallback: T, _ read: (Self) throws(ConfigurationError) -> T) -> T {
        do {
            return try read(self)
        } catch {
            problems.append(error)
            return fallback
        }
    }

    /// Keeps a refusal found outside the reader (a value that depends on another's).
    mutating func refuse(_ name: String, _ problem: String) {
        problems.append(ConfigurationError(name: name, problem: problem))
    }

    func optional(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty else {
            return nil
        }
        return value
    }

    func required(_ name: String, hint: String) throws(ConfigurationError) -> String {
        guard let value = optional(name) else { throw ConfigurationError(name: name, problem: "is required (\(hint))") }
        return value
    }

    /// `name` itself, or the contents of the file `name_FILE` names: the variable that gave it, and the text.
    func inlineOrFile(_ name: String) throws(ConfigurationError) -> (variable: String, text: String)? {
        if let inline = optional(name) { return (name, inline) }
        guard let path = optional(name + "_FILE") else { return nil }
        guard let text = files.contents(of: path) else {
            throw ConfigurationError(name: name + "_FILE", problem: "cannot be read (\(path))")
        }
        return (name + "_FILE", text)
    }

    /// The path `name` gives, checked to be readable (extra trust roots), or nil when unset.
    func readableFile(_ name: String) throws(ConfigurationError) -> String? {
        guard let path = optional(name) else { return nil }
        guard files.isReadable(path) else {
            throw ConfigurationError(name: name, problem: "cannot be read (\(path))")
        }
        return path
    }

    /// A credential or key given as text, nil when unset: refused, with `reason`, when shorter than 16 characters.
    func secret(_ name: String, because reason: String) throws(ConfigurationError) -> String? {
        guard let value = optional(name) else { return nil }
        guard value.count >= 16 else {
            throw ConfigurationError(name: name, problem: "is shorter than 16 characters: \(reason)")
        }
        return value
    }

    func integer(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws(ConfigurationError)
        -> Int {
        guard let text = optional(name) else { return defaultValue }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError(
                name: name,
                problem: "must be a whole number in \(range.lowerBound)...\(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    /// A duration: a number with `s`, `m`, `h` or `d` (a bare number is seconds), e.g. `8h`, `90m`, `30s`.
    func duration(_ name: String, default defaultValue: Double, range: ClosedRange<Double>,
                  examples: String = "8h, 90m or 30s") throws(ConfigurationError) -> Double {
        guard let text = optional(name) else { return defaultValue }
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        let unit = text.last.flatMap { units[$0] }
        let number = Double(unit == nil ? text : String(text.dropLast()))
        guard let number, number.isFinite, range.contains(number * (unit ?? 1)) else {
            let days = Int(range.upperBound / 86_400)
            throw ConfigurationError(name: name, problem: """
                must be a duration such as \(examples), between \(Int(range.lowerBound)) s and \
                \(days) day\(days == 1 ? "" : "s"); got "\(text)"
                """)
        }
        return number * (unit ?? 1)
    }

    /// How long to keep something: a duration as `duration` reads it, or `off` (nil) to keep it for ever.
    func retention(_ name: String, default defaultValue: Double, range: ClosedRange<Double>)
        throws(ConfigurationError) -> Double? {
        if optional(name)?.lowercased() == "off" { return nil }
        return try duration(name, default: defaultValue, range: range, examples: "30d or 12h (or off, to keep all)")
    }

    /// `true` or `false` (also 1/0, yes/no); false when unset.
    func boolean(_ name: String) throws(ConfigurationError) -> Bool {
        guard let text = optional(name)?.lowercased() else { return false }
        switch text {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: throw ConfigurationError(name: name, problem: "must be true or false, got \"\(text)\"")
        }
    }

    func httpsURL(_ name: String, default defaultValue: String) throws(ConfigurationError) -> String {
        guard let text = optional(name) else { return defaultValue }
        guard let url = URLComponents(string: text), url.scheme == "https", let host = url.host, !host.isEmpty else {
            let service = name.hasPrefix("FCM") ? "FCM" : "APNs"
            throw ConfigurationError(name: name, problem: """
                must be an https:// URL (\(service) speaks HTTP/2 over TLS only), got "\(text)"
                """)
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// One of `choices` (without regard to case), `defaultValue` when unset.
    func choice(_ name: String, default defaultValue: String, among choices: [String]) throws(ConfigurationError)
        -> String {
        let value = (optional(name) ?? defaultValue).lowercased()
        guard choices.contains(value) else {
            throw ConfigurationError(
                name: name, problem: "must be one of \(choices.joined(separator: ", ")), got \"\(value)\"")
        }
        return value
    }

    /// One of an enum's raw values (without regard to case), `defaultValue` when unset.
    func choice<Choice: CaseIterable & RawRepresentable>(_ name: String, default defaultValue: Choice)
        throws(ConfigurationError) -> Choice where Choice.RawValue == String {
        let text = try choice(name, default: defaultValue.rawValue, among: Choice.allCases.map(\.rawValue))
        return Choice(rawValue: text) ?? defaultValue
    }

    /// A `postgres://` (or `postgresql://`) URL with a host.
    func postgresURL(_ name: String) throws(ConfigurationError) -> String {
        let text = try required(name, hint: "a postgres:// URL, e.g. postgres://user:pass@localhost:5432/liverelay")
        guard let url = URLComponents(string: text), ["postgres", "postgresql"].contains(url.scheme ?? ""),
              url.host != nil else {
            throw ConfigurationError(name: name, problem: "is not a postgres:// URL with a host")
        }
        return text
    }
}
