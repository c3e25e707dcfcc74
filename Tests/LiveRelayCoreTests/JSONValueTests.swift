import Foundation
import LiveRelayCore
import Testing

@Suite("JSONValue")
struct JSONValueTests {
    @Test("parsing keeps booleans, integers, numbers, strings, null, arrays and objects apart")
    func parsesEveryKind() throws {
        let value = try JSONValue(parsing: #"""
            {"t": true, "f": false, "zero": 0, "one": 1, "big": 12345678901234, "neg": -7, "pi": 1.5,
             "s": "x\"y", "n": null, "a": [false, 0, 1, "1"], "o": {"k": {}}}
            """#)
        #expect(value == .object([
            "t": .bool(true), "f": .bool(false), "zero": .integer(0), "one": .integer(1),
            "big": .integer(12345678901234),
            "neg": .integer(-7), "pi": .number(1.5), "s": .string("x\"y"), "n": .null,
            "a": .array([.bool(false), .integer(0), .integer(1), .string("1")]), "o": .object(["k": .object([:])]),
        ]))
        let compact = #"{"a":[false,0,1,"1"],"big":12345678901234,"f":false,"n":null,"neg":-7,"o":{"k":{}},"one":1,"#
            + #""pi":1.5,"s":"x\"y","t":true,"zero":0}"#
        #expect(String(decoding: value.compactBytes, as: UTF8.self) == compact)
    }

    @Test("text that is not JSON is an error", arguments: [
        "{not json", "", "  ", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "01", "1.", ".5", "-", "1e", "+1", "tru",
        "nul", "[1 2]", "\"abc", "\"a\tb\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "1e400", "[[]]]", "{} {}", String(repeating: "[", count: 600),
        // A key twice in one object, also when spelt with an escape or nested.
        #"{"a":1,"a":1}"#, #"{"a":1,"\u0061":2}"#, #"[{"k":{"x":1,"y":{},"x":2}}]"#,
    ])
    func rejectsGarbage(text: String) {
        #expect(throws: DecodingError.self) { try JSONValue(parsing: text) }
    }

    @Test("escapes, surrogate pairs, numbers and whitespace read as JSON means them")
    func readsEscapesAndNumbers() throws {
        let value = try JSONValue(parsing: #"""
             { "e" : "q\"b\\s\/n\nt\tr\rb\bf\fu\u00e9\u0000", "pair": "\ud83d\ude00", "raw": "é😀",
               "n": [0, -0, -12, 9223372036854775807, -9223372036854775808, 9223372036854775808, 1.25, -2.5e-3,
                     1E2, 0.1] }	

            """#)
        #expect(value == .object([
            "e": .string("q\"b\\s/n\nt\tr\rb\u{8}f\u{C}u\u{E9}\u{0}"),
            "pair": .string("😀"), "raw": .string("é😀"),
            "n": .array([.integer(0), .integer(0), .integer(-12), .integer(.max), .integer(.min),
                         .number(9223372036854775808), .number(1.25), .number(-0.0025), .number(100), .number(0.1)]),
        ]))
        #expect(try JSONValue(parsing: " 7 ") == .integer(7))
        #expect(try JSONValue(parsing: "\"top\"") == .string("top"))
    }

    @Test("what it reads, Foundation reads the same (a corpus of states and generated values)")
    func agreesWithFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        var documents = [
            #"{"score": {"home": 2, "away": 1}, "clock": "78:12", "events": [{"t": "goal", "min": 77.5}], "ok": true}"#,
            #"[null, false, "\u20ac", {"": ""}, [[], {}], -1e-7, 123456789012]"#,
        ]
        for _ in 0..<200 { documents.append(Self.randomValue(depth: 0, using: &generator).compactText) }
        for text in documents {
            let ours = try JSONValue(parsing: text)
            let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed)
            let reread = try JSONSerialization.jsonObject(with: Data(ours.compactText.utf8), options: .fragmentsAllowed)
            let options: JSONSerialization.WritingOptions = [.sortedKeys, .fragmentsAllowed]
            let expected = try JSONSerialization.data(withJSONObject: theirs, options: options)
            #expect(try JSONSerialization.data(withJSONObject: reread, options: options) == expected, "\(text)")
        }
    }

    static func randomValue(depth: Int, using generator: inout SystemRandomNumberGenerator) -> JSONValue {
        let words = ["a", "", "é", "quote\"", "back\\slash", "line\nbreak", "tab\t", "\u{1}", "😀", "key"]
        switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .integer(Int64.random(in: Int64.min...Int64.max, using: &generator))
        case 3: return .number(Double.random(in: -1e6...1e6, using: &generator))
        case 4: return .string(words.randomElement(using: &generator)! + words.randomElement(using: &generator)!)
        case 5:
            return .array((0..<Int.random(in: 0..<4, using: &generator)).map { _ in
                randomValue(depth: depth + 1, using: &generator)
            })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0..<4, using: &generator) {
                members[words.randomElement(using: &generator)!] = randomValue(depth: depth + 1, using: &generator)
            }
            return .object(members)
        }
    }

    @Test("hex strings are lowercase, two digits a byte")
    func hex() {
        #expect(hexString([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
    }
}
