/// Splits a SQL file into statements, so each can be sent on its own (the extended protocol takes one at a time).
/// Understands `'…'`, `"…"`, `$tag$…$tag$`, `-- …` and `/* … */`; semicolons inside them do not split.
public enum SQLScript {
    public static func statements(_ sql: String) -> [String] {
        let chars = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0
        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty, !isOnlyComments(text) { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        func copy(until end: [Unicode.Scalar]) {
            while index < chars.count {
                if index + end.count <= chars.count, Array(chars[index..<(index + end.count)]) == end {
                    current.append(contentsOf: end)
                    index += end.count
                    return
                }
                current.append(chars[index])
                index += 1
            }
        }
        while index < chars.count {
            let char = chars[index]
            let next: Unicode.Scalar? = index + 1 < chars.count ? chars[index + 1] : nil
            switch char {
            case "'", "\"":
                current.append(char)
                index += 1
                copy(until: [char])
            case "-" where next == "-":
                copy(until: ["\n"])
            case "/" where next == "*":
                copy(until: ["*", "/"])
            case "$":
                // A dollar quote: $$ or $tag$ (a tag is letters, digits and underscores, not starting with a digit).
                var end = index + 1
                func continuesTag(_ char: Unicode.Scalar) -> Bool {
                    char == "_" || char.properties.isAlphabetic || (end > index + 1 && ("0"..."9").contains(char))
                }
                while end < chars.count, continuesTag(chars[end]) {
                    end += 1
                }
                if end < chars.count, chars[end] == "$" {
                    let tag = Array(chars[index...end])
                    current.append(contentsOf: tag)
                    index = end + 1
                    copy(until: tag)
                } else {
                    current.append(char)
                    index += 1
                }
            case ";":
                index += 1
                flush()
            default:
                current.append(char)
                index += 1
            }
        }
        flush()
        return statements
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy {
            $0.trimmingCharacters(in: .whitespaces).hasPrefix("--") || $0.trimmingCharacters(in: .whitespaces).isEmpty
        }
    }
}
