import LiveRelayCore

/// The keys a body type read while it decoded itself. Unknown keys are let pass (clients of the OpenCode relay send
/// their own), but one that is a field's name written another way (`content_state` or `ContentState` for
/// `contentState`) would be dropped without a word, so it is refused, naming the field.
final class FieldNamesRead: @unchecked Sendable {
    // Written and read by one synchronous JSONDecoder.decode call and the code around it, on one thread.
    var names: Set<String> = []
}

extension CodingUserInfoKey {
    /// Where `BodyFields` records the keys it reads (a `FieldNamesRead`).
    static let fieldNamesRead = CodingUserInfoKey(rawValue: "liverelay.fieldNamesRead")!
}

extension BodyFields {
    /// A field's name as people misspell it the same way: case, `_` and `-` left out.
    static func spellingKey(_ name: String) -> String {
        String(name.lowercased().filter { $0 != "_" && $0 != "-" })
    }

    /// The sentence for the first key of `body` (an object, or each object of an array) that is not a field but a
    /// field's name written another way, where that field itself is not given; nil when there is none.
    static func misspelling(in body: JSONValue, fields: Set<String>) -> String? {
        let objects: [[String: JSONValue]] = switch body {
        case .object(let members): [members]
        case .array(let elements): elements.compactMap(\.objectValue)
        default: []
        }
        let fieldsBySpelling = Dictionary(fields.map { (spellingKey($0), $0) }, uniquingKeysWith: { first, _ in first })
        for members in objects {
            for key in members.keys.sorted() where !fields.contains(key) {
                guard let field = fieldsBySpelling[spellingKey(key)], members[field] == nil else { continue }
                return "\(key.excerpt) is not a field of this body: did you mean \(field)?"
            }
        }
        return nil
    }
}
