import StrictJSON
import Testing

@Suite struct JSONObjectTests {
    @Test("Members are read by name, with their JSON types")
    func readsMembers() throws {
        let object = try JSONObject(
            parsing: #"{"s":"a\"b\u00e9","n":1738582319,"f":1.5e3,"t":true,"o":{"x":[1,2]},"a":["p","q"],"z":null}"#)
        #expect(try object.string("s") == "a\"bé")
        #expect(try object.integer("n") == 1_738_582_319)
        #expect(try object.number("f") == 1500)
        #expect(try object.bool("t") == true)
        #expect(try object.object("o")?.kind(of: "x") == .array)
        #expect(try object.stringArray("a") == ["p", "q"])
        #expect(object.kind(of: "z") == .null)
        #expect(try object.string("missing") == nil)
        #expect(object.keys == ["s", "n", "f", "t", "o", "a", "z"])
    }

    @Test("A member of the wrong type is an error, not a default")
    func typeMismatch() throws {
        let object = try JSONObject(parsing: #"{"exp":"1738582319","iss":5,"ok":"true"}"#)
        #expect(throws: JSONError.typeMismatch(member: "exp", expected: .number)) { try object.integer("exp") }
        #expect(throws: JSONError.typeMismatch(member: "iss", expected: .string)) { try object.string("iss") }
        #expect(throws: JSONError.typeMismatch(member: "ok", expected: .bool)) { try object.bool("ok") }
        #expect(throws: JSONError.typeMismatch(member: "exp", expected: .number)) {
            try JSONObject(parsing: #"{"exp":1.5}"#).integer("exp")
        }
    }

    @Test(
        "An integer may be written with a fraction or an exponent when its value is integral (JSON Schema's integer), below 2^53",
        arguments: [
            ("7923", 7923), ("7923.0", 7923), ("1e3", 1000), ("-2.50e1", -25), ("1.5", nil), ("-0.0", 0),
            ("123456789012345678", 123_456_789_012_345_678),
            ("9007199254740991.0", 9_007_199_254_740_991), ("9007199254740993.0", nil), ("1e400", nil), ("12345678901234567890", nil),
            // 19 nines overflow Int64 (the fuzzers found a trap here), and longer runs of digits.
            ("999999999999999999", 999_999_999_999_999_999), ("-999999999999999999", -999_999_999_999_999_999),
            ("9999999999999999999", nil), ("-9999999999999999999", nil), ("99999999999999991649423733", nil),
            (String(repeating: "9", count: 58) + "0", nil),
        ] as [(String, Int64?)])
    func integralNumbers(text: String, expected: Int64?) throws {
        let object = try JSONObject(parsing: #"{"n":\#(text)}"#)
        #expect((try? object.integer("n")) == expected)
        var reader = JSONReader(Array(#"{"n":\#(text)}"#.utf8))
        try reader.beginObject()
        _ = try reader.nextMember()
        #expect(try reader.integer() == expected, "the pull reader agrees")
    }

    @Test("Duplicate member names are rejected, also when one is escaped or nested", arguments: duplicated)
    func duplicates(text: String) {
        #expect(throws: JSONError.self) { try JSONObject(parsing: text) }
        do {
            _ = try JSONObject(parsing: text)
        } catch {
            guard case .duplicateMember = error else {
                Issue.record("expected duplicateMember, got \(error)")
                return
            }
        }
    }

    /// Texts that are not exactly one valid JSON object (also used by `JSONReaderTests`).
    static let notOneObject = [
        "", "[]", "\"s\"", "{", "{}x", "{} {}", "{'a':1}", #"{"a":01}"#, #"{"a":1.}"#, #"{"a":-}"#,
        #"{"a":tru}"#, #"{"a":1,}"#, #"{"a" 1}"#, "{\"a\":\"x\ny\"}", #"{"a":"\x"}"#, #"{"a":"\u12"}"#,
        #"{"a":[1,]}"#, #"{a:1}"#, #"{"a":NaN}"#, #"{"a":"unterminated}"#, #"{"a":[1 2]}"#, #"{"a":1 "b":2}"#,
        #"{,"a":1}"#, #"{"a":[,1]}"#,
    ]

    /// Objects with a member name twice (also used by `JSONReaderTests`).
    static let duplicated = [
        #"{"sub":"a","sub":"b"}"#,
        #"{"sub":"a","s\u0075b":"b"}"#,
        #"{"x":{"k":1,"k":2}}"#,
        #"{"x":[{"k":1},{"j":[{"k":1,"k":2}]}]}"#,
    ]

    @Test("Texts that are not exactly one JSON object are refused", arguments: notOneObject)
    func refused(text: String) {
        #expect(throws: JSONError.self) { try JSONObject(parsing: text) }
    }

    @Test("Whitespace around tokens is accepted, as RFC 8259 allows")
    func whitespace() throws {
        let object = try JSONObject(parsing: " {\r\n \"iss\" : \"joe\" ,\t\"exp\":1300819380 } \n")
        #expect(try object.string("iss") == "joe")
        #expect(try object.integer("exp") == 1_300_819_380)
    }

    @Test("Nesting deeper than the limit is refused")
    func depth() {
        let deep = "{\"a\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}"
        #expect(throws: JSONError.tooDeep) { try JSONObject(parsing: deep) }
    }

    /// Texts that are JSON but for their strings: invalid UTF-8 (a bad continuation, an overlong
    /// form, an encoded surrogate, beyond U+10FFFF, a truncated sequence) or a lone surrogate
    /// escape, in a value, a skipped nested value or a member name.
    static let invalidStrings: [[UInt8]] = [
        Array(#"{"a":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
        Array(#"{"a":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),
        Array(#"{"a":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),
        Array(#"{"a":""#.utf8) + [0xF4, 0x90, 0x80, 0x80] + Array(#""}"#.utf8),
        Array(#"{"a":""#.utf8) + [0xE2, 0x82] + Array(#""}"#.utf8),
        Array(#"{"skip":{"x":["#.utf8) + [0x22, 0xFF, 0x22] + Array("]}}".utf8),
        Array(#"{""#.utf8) + [0xC3, 0x28] + Array(#"":1}"#.utf8),
        Array(#"{"a":"\ud800x"}"#.utf8), Array(#"{"a":"\udc00"}"#.utf8), Array(#"{"skip":["\ud83dx"]}"#.utf8),
        Array(#"{"\ud800":1}"#.utf8),
    ]

    @Test("Invalid UTF-8 and lone surrogates are refused anywhere: in values read or skipped, and in member names")
    func utf8() throws {
        for text in Self.invalidStrings {
            #expect(throws: JSONError.self, "\(text)") { try JSONObject(parsing: text) }
        }
        let pair = try JSONObject(parsing: #"{"a":"\ud83d\ude00","b":"é€😀"}"#)
        #expect(try pair.string("a") == "😀")
        #expect(try pair.string("b") == "é€😀")
    }

    @Test("objectArray: the objects of an array member; a non-object element is named by its index")
    func objectArrays() throws {
        let object = try JSONObject(parsing: #"{"items":[{"a":1},{"a":2,"b":[1,{"c":"x"}]}],"mixed":[{"a":1},2],"none":[]}"#)
        let items = try #require(try object.objectArray("items"))
        #expect(items.count == 2)
        #expect(try items[1].integer("a") == 2)
        #expect(try object.objectArray("none")?.isEmpty == true)
        #expect(try object.objectArray("absent") == nil)
        #expect(throws: JSONError.typeMismatch(member: "mixed[1]", expected: .object)) { try object.objectArray("mixed") }
        #expect(throws: JSONError.typeMismatch(member: "items", expected: .string)) { try object.string("items") }
    }
}
