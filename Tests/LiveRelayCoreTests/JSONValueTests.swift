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

    @Test("text that is not JSON is an error")
    func rejectsGarbage() {
        #expect(throws: (any Error).self) { try JSONValue(parsing: "{not json") }
    }

    @Test("hex strings are lowercase, two digits a byte")
    func hex() {
        #expect(hexString([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
    }
}
