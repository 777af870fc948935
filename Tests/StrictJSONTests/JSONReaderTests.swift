import StrictJSON
import Testing

@Suite struct JSONReaderTests {
    /// Reads a whole document generically, as a caller that knows nothing of its shape would,
    /// and writes it back compactly (strings as read, numbers as integers or `~`).
    static func walk(_ text: String) throws(JSONError) -> String {
        var reader = JSONReader(Array(text.utf8))
        var output = ""
        try value(&reader, into: &output)
        try reader.end()
        return output
    }

    static func value(_ reader: inout JSONReader, into output: inout String) throws(JSONError) {
        switch try reader.kind() {
        case .object:
            try reader.beginObject()
            output += "{"
            var first = true
            while let name = try reader.nextMember() {
                output += (first ? "" : ",") + name + ":"
                first = false
                try value(&reader, into: &output)
            }
            output += "}"
        case .array:
            try reader.beginArray()
            output += "["
            var first = true
            while try reader.nextElement() {
                output += first ? "" : ","
                first = false
                try value(&reader, into: &output)
            }
            output += "]"
        case .string: output += "'" + (try reader.string()) + "'"
        case .number: output += (try reader.integer()).map(String.init) ?? "~"
        case .bool: output += String(try reader.bool())
        case .null:
            try reader.skipValue()
            output += "null"
        }
    }

    @Test("Values are read in document order, each once, as their kind")
    func reads() throws {
        let text =
            #" { "s" : "a\"b\u00e9", "n":-17, "f":1.5e3, "g":2.5, "big":12345678901234567890, "t":true, "o":{"x":[1,{"y":null}],"e":{}}, "a":["p",false,[]] } "#
        #expect(try Self.walk(text) == #"{s:'a"bé',n:-17,f:1500,g:~,big:~,t:true,o:{x:[1,{y:null}],e:{}},a:['p',false,[]]}"#)
        // The same name in sibling objects is no duplicate.
        #expect(try Self.walk(#"{"a":[{"k":1},{"k":2}],"k":{"k":3}}"#) == "{a:[{k:1},{k:2}],k:{k:3}}")
    }

    @Test("Skipped values are checked like read ones")
    func skips() throws {
        var reader = JSONReader(Array(#"{"skip":{"deep":[1,{"x":"y"}]},"keep":2}"#.utf8))
        try reader.beginObject()
        #expect(try reader.nextMember() == "skip")
        try reader.skipValue()
        #expect(try reader.nextMember() == "keep")
        #expect(try reader.integer() == 2)
        #expect(try reader.nextMember() == nil)
        try reader.end()
        for text in [#"{"skip":{"k":1,"k":2}}"#, #"{"skip":[1,]}"#, #"{"skip":"\x"}"#] {
            #expect(throws: JSONError.self, "\(text)") {
                var reader = JSONReader(Array(text.utf8))
                try reader.beginObject()
                while try reader.nextMember() != nil { try reader.skipValue() }
                try reader.end()
            }
        }
    }

    @Test("Names are matched among known ones without making strings; escaped names match, others are past the end")
    func knownNames() throws {
        let names = JSONNames(["id", "score"])
        var reader = JSONReader(Array(#"{"score":1,"other":2,"\u0069d":"x","sc":3}"#.utf8))
        try reader.beginObject()
        var seen: [Int] = []
        while let member = try reader.nextMember(among: names) {
            seen.append(member)
            try reader.skipValue()
        }
        try reader.end()
        #expect(seen == [1, 2, 0, 2])
        var duplicate = JSONReader(Array(#"{"id":1,"\u0069d":2}"#.utf8))
        try duplicate.beginObject()
        _ = try duplicate.nextMember(among: names)
        try duplicate.skipValue()
        #expect(throws: JSONError.duplicateMember("id")) { try duplicate.nextMember(among: names) }
    }

    @Test("Every text JSONObject refuses is refused", arguments: JSONObjectTests.notOneObject.filter { !["[]", "\"s\""].contains($0) })
    func refused(text: String) {
        #expect(throws: JSONError.self) { try Self.walk(text) }
    }

    @Test("Duplicate member names are refused, also escaped, nested and in array items", arguments: JSONObjectTests.duplicated)
    func duplicates(text: String) {
        #expect(throws: JSONError.self) { try Self.walk(text) }
        #expect(throws: JSONError.self, "when skipped too") {
            var reader = JSONReader(Array(text.utf8))
            try reader.skipValue()
            try reader.end()
        }
    }

    @Test("Nesting deeper than the limit, read or skipped, is refused")
    func depth() {
        let deep = "{\"a\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}"
        #expect(throws: JSONError.tooDeep) { try Self.walk(deep) }
        #expect(throws: JSONError.tooDeep) {
            var reader = JSONReader(Array(deep.utf8))
            try reader.skipValue()
        }
    }

    @Test("A value read as another kind is an error; invalid UTF-8 and lone surrogates are refused")
    func types() throws {
        var reader = JSONReader(Array(#"{"a":"1"}"#.utf8))
        try reader.beginObject()
        _ = try reader.nextMember()
        #expect(throws: JSONError.self) { try reader.integer() }
        #expect(throws: JSONError.self) { try Self.walk(#"{"a":"\ud800x"}"#) }
        for text in JSONObjectTests.invalidStrings {
            #expect(throws: JSONError.self, "\(text)") {
                var reader = JSONReader(text)
                try reader.beginObject()
                while try reader.nextMember() != nil { try reader.skipValue() }
                try reader.end()
            }
        }
        #expect(try Self.walk(#"{"a":"\ud83d\ude00"}"#) == "{a:'😀'}")
    }
}
