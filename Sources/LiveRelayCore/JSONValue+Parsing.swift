extension JSONValue {
    /// Parses JSON text (RFC 8259; a bare value at the top level is allowed; each key of an object once, as I-JSON,
    /// RFC 7493, requires); throws `DecodingError` when the text is not JSON.
    ///
    /// Read byte by byte straight into the enum. The relay parses every claimed row's state with it (an activity's
    /// content, a channel's state), and Foundation's two ways cost: `JSONSerialization` builds Foundation objects that
    /// are then cast back one by one (19% of the relay's CPU while it delivered 1,000 channel updates), `JSONDecoder`
    /// tries each type in turn and pays for a thrown error per miss.
    public init(parsing text: String) throws {
        var text = text
        self = try text.withUTF8 { bytes in
            var parser = JSONTextParser(bytes: bytes)
            return try parser.parseDocument()
        }
    }
}

/// A recursive-descent reader of one JSON document over UTF-8 bytes.
private struct JSONTextParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0

    /// Deeper nesting than this is refused rather than risking the stack (no state the relay sends comes close).
    static let maximumDepth = 512

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws -> JSONValue {
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw failure("text after the JSON value") }
        return value
    }

    private mutating func parseValue() throws -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw failure("the text ends where a value was expected") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseObject() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let keyStart = index
            let key = try parseString()
            // A key given twice is read as its first by some readers and as its last by others (PostgreSQL's jsonb,
            // JavaScript, Python): refused, so that what the relay acts on is what every other reader sees.
            guard members[key] == nil else {
                index = keyStart
                throw failure("the key \"\(key.excerpt)\" appears twice in one object")
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
            index += 1
            members[key] = try parseValue()
            skipWhitespace()
            guard index < bytes.count else { throw failure("the text ends inside an object") }
            let separator = bytes[index]
            guard separator == UInt8(ascii: ",") || separator == UInt8(ascii: "}") else {
                throw failure("expected ',' or '}'")
            }
            index += 1
            if separator == UInt8(ascii: "}") { return .object(members) }
        }
    }

    private mutating func parseArray() throws -> JSONValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw failure("the text ends inside an array") }
            let separator = bytes[index]
            guard separator == UInt8(ascii: ",") || separator == UInt8(ascii: "]") else {
                throw failure("expected ',' or ']'")
            }
            index += 1
            if separator == UInt8(ascii: "]") { return .array(elements) }
        }
    }

    /// A string from its opening quote; the common string, without escapes, is one slice of the input.
    private mutating func parseString() throws -> String {
        index += 1
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            guard byte >= 0x20 else { throw failure("a control character inside a string") }
            index += 1
        }
        throw failure("the text ends inside a string")
    }

    /// The rest of a string that has escapes, `start` being its first byte.
    private mutating func parseEscapedString(from start: Int) throws -> String {
        var out = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): out.append(contentsOf: String(try parseUnicodeEscape()).utf8)
                default: throw failure("an unknown escape")
                }
            case 0..<0x20:
                throw failure("a control character inside a string")
            default:
                out.append(byte)
            }
        }
        throw failure("the text ends inside a string")
    }

    /// The character of a `\u` escape (its `u` read), joining a surrogate pair written as two escapes.
    private mutating func parseUnicodeEscape() throws -> Character {
        let first = try parseHex4()
        if (0xD800..<0xDC00).contains(first) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw failure("a high surrogate without its low surrogate") }
            index += 2
            let second = try parseHex4()
            guard (0xDC00..<0xE000).contains(second) else { throw failure("a high surrogate without its low one") }
            let scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("an invalid surrogate pair") }
            return Character(unicode)
        }
        guard let unicode = Unicode.Scalar(first) else { throw failure("a low surrogate alone") }
        return Character(unicode)
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a short \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape that is not hexadecimal")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// A number as JSON writes it: an integer that fits 64 bits is `.integer`, anything else `.number`.
    private mutating func parseNumber() throws -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw failure("a number without digits") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("a fraction without digits") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw failure("an exponent without digits") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if integral, let value = Int64(text) { return .integer(value) }
        guard let value = Double(text), value.isFinite else { throw failure("a number out of range") }
        return .number(value)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func expect(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("unexpected end of text") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw failure("unexpected character")
        }
        index += count
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    private mutating func enter() throws {
        depth += 1
        guard depth <= Self.maximumDepth else { throw failure("nested more than \(Self.maximumDepth) deep") }
    }

    private func failure(_ what: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: DecodingError.notJSON + "\(what) at byte \(index)"))
    }
}

extension DecodingError {
    /// How `JSONValue(parsing:)` begins the description of text that is not JSON.
    static let notJSON = "not JSON: "

    /// Where the text stopped being JSON, as `JSONValue(parsing:)` found it ("expected ',' or '}' at byte 14"), for
    /// an answer to say; nil for another error.
    public var jsonSyntaxProblem: String? {
        guard case .dataCorrupted(let context) = self, context.debugDescription.hasPrefix(Self.notJSON) else {
            return nil
        }
        return String(context.debugDescription.dropFirst(Self.notJSON.count))
    }
}
