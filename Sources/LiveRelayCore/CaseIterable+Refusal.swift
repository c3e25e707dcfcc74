extension CaseIterable where Self: RawRepresentable, Self.RawValue == String {
    /// The sentence that refuses `given` for a field or parameter of this type, the same wherever a client can send
    /// one (query strings, JSON bodies, MCP arguments): `status must be active, ended or invalidated, not "bogus"`.
    public static func refusal(of given: String, named name: String) -> String {
        let values = allCases.map(\.rawValue)
        let listed = values.count > 1
            ? values.dropLast().joined(separator: ", ") + " or " + values[values.count - 1]
            : values.joined()
        return "\(name) must be \(listed), not \"\(given.excerpt)\""
    }
}
