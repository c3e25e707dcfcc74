import LiveRelayCore

/// The revision of `sql/`, from `sql/REVISION`: a number raised by one whenever a file of `sql/` changes, and the
/// digest of the files it was raised for.
///
/// Migrations order two releases that change the schema; most releases change only functions and triggers (`sql/`),
/// which `serve` re-applies whenever their checksums differ. Without an order, an old relay restarting during a
/// rolling upgrade put its functions back under the new relays, and each restart of either flipped them again. The
/// database keeps the revision that wrote its functions; a relay with a lower one leaves them alone.
public struct SQLRevision: Sendable, Equatable {
    /// The file, in `sql/`.
    public static let fileName = "REVISION"
    /// Its row in `schema_migrations` (the number in the `checksum` column).
    static let version = "sql/REVISION"

    public var number: Int
    /// `digest(of:)` of the `sql/` files this number was given to.
    public var digest: String

    public init(number: Int, digest: String) {
        self.number = number
        self.digest = digest
    }

    /// Reads `revision N` and `digest HEX` lines; `#` starts a comment.
    public init(parsing text: String) throws {
        var number: Int?
        var digest: String?
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let key = words.first, !key.hasPrefix("#") else { continue }
            guard words.count == 2 else { throw Problem("\"\(line)\" is not a `key value` line") }
            switch key {
            case "revision": number = Int(words[1])
            case "digest": digest = String(words[1])
            default: throw Problem("unknown key \"\(key)\"")
            }
        }
        guard let number, number > 0 else { throw Problem("no `revision N` line with N a whole number above 0") }
        guard let digest else { throw Problem("no `digest` line") }
        self.init(number: number, digest: digest)
    }

    /// A digest of the files' names and contents, in name order.
    public static func digest(of scripts: [Migrator.Script]) -> String {
        sha256Hex(scripts.sorted { $0.name < $1.name }.map { "\($0.name) \($0.checksum)\n" }.joined())
    }

    /// The file's text for this revision.
    public var fileText: String {
        """
        # The revision of sql/: raise it by one whenever a file here changes (the test "sql/ revision" says when, and
        # gives the digest), so that an older release's relay leaves a newer release's functions in place.
        revision \(number)
        digest \(digest)

        """
    }

    /// Why `sql/REVISION` could not be read.
    public struct Problem: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = "sql/\(SQLRevision.fileName): \(description)" }
    }
}
