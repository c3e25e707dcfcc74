import Hummingbird

extension Parameters {
    /// A text parameter of the query string, nil when absent; one holding U+0000 is refused by its name.
    func text(_ name: String) throws -> String? {
        try get(name).map { try Self.checked($0, named: name) }
    }

    /// `value`, unless it holds U+0000: PostgreSQL stores no such text, and would refuse the statement with a message
    /// that names no parameter.
    static func checked(_ value: String, named name: String) throws -> String {
        guard !value.utf8.contains(0) else { throw APIError.containsNUL(name) }
        return value
    }
}
