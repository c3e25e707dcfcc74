/// The environment variables LiveRelay reads (README, "Commands and configuration"), and what to make of one that
/// looks like a setting but is none. A misspelt name would otherwise be ignored without a word, and its default used:
/// `LIVERELAY_PRIORITY_10_PER_HOUR=600` would leave the budget at 120.
public enum SettingNames {
    /// Every variable the relay reads: the names of `lines`, where each has its line of `serve --help`.
    public static let known: Set<String> = Set(lines.flatMap(\.names))
    /// Read by the project's own scripts and tests, not by the relay, and so often in its environment.
    static let tooling: Set<String> = ["LIVERELAY_BINARY"]
    /// Prefixes of LiveRelay's own names: other variables (PATH, PG*, …) are none of its business.
    static let prefixes = ["APNS_", "FCM_", "LIVERELAY_"]

    /// A variable that looks like a setting and is none, with the setting it most likely means.
    public struct Unknown: Sendable, Equatable {
        public var name: String
        public var meant: String?

        /// "APNS_KEY_FILE is not a setting LiveRelay reads (did you mean APNS_PRIVATE_KEY_FILE?)"
        public var sentence: String {
            "\(name) is not a setting LiveRelay reads" + (meant.map { " (did you mean \($0)?)" } ?? "")
        }
    }

    /// The variables of `environment` with one of LiveRelay's prefixes that it does not read, by name.
    public static func unknown(in environment: [String: String]) -> [Unknown] {
        environment.keys
            .filter { name in
                prefixes.contains { name.hasPrefix($0) } && !known.contains(name) && !tooling.contains(name)
            }
            .sorted()
            .map { Unknown(name: $0, meant: meant(by: $0)) }
    }

    /// The known name `name` most likely stands for: one with the same words give or take some (`APNS_KEY_FILE` for
    /// `APNS_PRIVATE_KEY_FILE`, `FCM_SERVICE_ACCOUNT_JSON` for `FCM_SERVICE_ACCOUNT`), else one a keystroke or so away
    /// (`LIVERELAY_WORKER`; up to one edit per six characters, at most three); the nearest, or nil.
    static func meant(by name: String) -> String? {
        let words = Set(name.split(separator: "_"))
        let allowed = max(1, min(3, name.count / 6))
        let candidates = known.compactMap { candidate -> (rank: Int, distance: Int, name: String)? in
            let distance = editDistance(name, candidate)
            let theirs = Set(candidate.split(separator: "_"))
            if words.intersection(theirs).count >= 2, words.isSubset(of: theirs) || theirs.isSubset(of: words) {
                return (0, distance, candidate)
            }
            return distance <= allowed ? (1, distance, candidate) : nil
        }
        return candidates.min { ($0.rank, $0.distance, $0.name) < ($1.rank, $1.distance, $1.name) }?.name
    }

    /// Levenshtein distance over the names' characters (ASCII, in practice).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8), b = Array(b.utf8)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
