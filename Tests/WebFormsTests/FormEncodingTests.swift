import Testing
import WebForms

/// Form bodies (Apple's form post, the token endpoint's requests) and query strings.
@Suite struct FormEncodingTests {
    @Test("Fields in order, + and percent escapes decoded, empty pairs skipped, a missing = is an empty value")
    func fields() throws {
        let fields = try #require(FormEncoding.fields("code=c.0.abc&state=a%2Bb+c&&user=%7B%22n%22%3A1%7D&flag&=v"))
        #expect(fields.map(\.0) == ["code", "state", "user", "flag", ""])
        #expect(fields.map(\.1) == ["c.0.abc", "a+b c", #"{"n":1}"#, "", "v"])
        #expect(FormEncoding.fields("name=J%C3%B6rg")?.first?.1 == "Jörg")
    }

    @Test("A broken escape or invalid UTF-8 refuses the whole form", arguments: ["a=%", "a=%4", "a=%zz", "a=%+F", "a=%C3", "a=b&c=%FF"])
    func refused(_ body: String) {
        #expect(FormEncoding.fields(body) == nil)
    }

    @Test("distinct: the named fields by name, others ignored; nil when a named one repeats")
    func distinct() {
        let form = [("code", "c"), ("state", "s"), ("extra", "1"), ("extra", "2")]
        #expect(FormEncoding.distinct(form, among: ["code", "state", "user"]) == ["code": "c", "state": "s"])
        #expect(FormEncoding.distinct(form + [("state", "t")], among: ["code", "state"]) == nil)
        #expect(FormEncoding.distinct(form + [("state", "s")], among: ["code", "state"]) == nil, "even with the same value")
    }

    @Test("At most 256 fields: one more refuses the form")
    func fieldLimit() {
        let fields = (0..<FormEncoding.maximumFields).map { "f\($0)=v" }
        #expect(FormEncoding.fields(fields.joined(separator: "&"))?.count == 256)
        #expect(FormEncoding.fields((fields + ["one=more"]).joined(separator: "&")) == nil)
        #expect(FormEncoding.fields(fields.joined(separator: "&") + "&&&")?.count == 256, "empty pairs do not count")
    }

    @Test("& and = separate wherever they are, also before a combining mark (one Character with it)")
    func separatorsAreBytes() throws {
        let fields = try #require(FormEncoding.fields("a=1&\u{301}b=2"))
        #expect(fields.count == 2 && fields[1] == ("\u{301}b", "2"))
    }

    @Test("Encoding then decoding gives the value back")
    func roundTrip() {
        for value in ["", "plain", "a b+c&d=e%f", "Jörg 🍎", "/path?x=1#f"] {
            #expect(FormEncoding.decode(FormEncoding.encode(value)) == value)
        }
    }
}
