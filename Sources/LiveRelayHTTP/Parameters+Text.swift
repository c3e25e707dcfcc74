import Hummingbird

extension Parameters {
    /// A text filter of the query string, nil when absent. A value holding U+0000 is refused by name: PostgreSQL
    /// stores no such text, and would refuse the statement with a message that names no parameter.
    func text(_ name: String) throws -> String? {
        guard let value = get(name) else { return nil }
        guard !value.utf8.contains(0) else {
            throw APIError.badRequest("\(name) must not contain NUL characters (\\u0000): the database stores none")
        }
        return value
    }
}
