import StrictJSON
import Testing

@Suite struct JSONWriterTests {
    @Test("Writes what JSONText writes, separators and escapes included, and reads back")
    func matchesJSONText() throws {
        var writer = JSONWriter(capacity: 8)
        writer.beginObject()
        writer.member("s", "a\"b\\c\nd\u{1}é")
        writer.member("n", Int64(-42))
        writer.member("none", Optional<Int64>.none)
        writer.member("t", true)
        writer.key("list")
        writer.beginArray()
        for index in 0..<3 {
            writer.beginObject()
            writer.member("i", Int64(index))
            writer.endObject()
        }
        writer.beginArray()
        writer.endArray()
        writer.string("x")
        writer.endArray()
        writer.key("empty")
        writer.beginObject()
        writer.endObject()
        writer.endObject()
        let expected = JSONText.object([
            ("s", .string("a\"b\\c\nd\u{1}é")), ("n", .integer(-42)), ("none", .raw("null")), ("t", .bool(true)),
            ("list", .raw(#"[{"i":0},{"i":1},{"i":2},[],"x"]"#)), ("empty", .raw("{}")),
        ])
        #expect(String(decoding: writer.bytes, as: UTF8.self) == expected)
        let object = try JSONObject(parsing: writer.bytes)
        #expect(try object.string("s") == "a\"b\\c\nd\u{1}é")
        #expect(object.kind(of: "none") == .null)
    }
}
