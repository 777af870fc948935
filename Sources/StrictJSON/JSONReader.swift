/// A strict pull reader for JSON whose shape the caller knows: it walks objects and arrays in
/// document order and reads each value once, as what the caller expects, without building a tree
/// or scanning anything twice.
///
/// The rules are those of `JSONObject`: RFC 8259, duplicate member names rejected (compared after
/// unescaping) in every object, skipped ones included, nesting limited in depth, strings valid
/// UTF-8. A document is only accepted once `end()` returns, so a caller must not act on what it
/// read before that.
///
///     var reader = JSONReader(bytes)
///     try reader.beginObject()
///     while let name = try reader.nextMember() {
///         switch name {
///         case "cursor": cursor = try reader.kind() == .string ? try reader.string() : nil
///         default: try reader.skipValue()
///         }
///     }
///     try reader.end()
package struct JSONReader {
    /// An object or array being read.
    private struct Container {
        var isObject: Bool
        /// Where this object's member names start in `names`.
        var namesStart: Int
        /// The members or elements read so far.
        var count = 0
    }

    private var parser: JSONParser
    private var containers: [Container] = []
    /// The member names of the objects being read, unescaped, back to back.
    private var names: [UInt8] = []
    /// For each depth, the names of the object being read there (kept for the next object at that
    /// depth: a sync's body has hundreds of small objects in one array).
    private var tables: [JSONNameTable] = []

    package init(_ text: [UInt8], limits: JSONLimits = .tokens) {
        parser = JSONParser(text: text, limits: limits)
        containers.reserveCapacity(min(limits.depth, 32))
        names.reserveCapacity(256)
    }

    /// The byte offset reached.
    package var offset: Int { parser.position }

    /// The kind of the next value, which is not consumed.
    package mutating func kind() throws(JSONError) -> JSONObject.Kind {
        parser.skipWhitespace()
        guard let byte = parser.current else { throw parser.fail("expected a value") }
        switch byte {
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: throw parser.fail("expected a value")
        }
    }

    /// Enters the object that is the next value; read its members with `nextMember()`.
    package mutating func beginObject() throws(JSONError) {
        try begin(UInt8(ascii: "{"), isObject: true)
    }

    /// Enters the array that is the next value; read its elements with `nextElement()`.
    package mutating func beginArray() throws(JSONError) {
        try begin(UInt8(ascii: "["), isObject: false)
    }

    private mutating func begin(_ open: UInt8, isObject: Bool) throws(JSONError) {
        parser.skipWhitespace()
        guard containers.count < parser.maximumDepth else { throw .tooDeep }
        try parser.expect(open, isObject ? "expected an object" : "expected an array")
        if isObject {
            while tables.count <= containers.count { tables.append(JSONNameTable()) }
            tables[containers.count].removeAll()
        }
        containers.append(Container(isObject: isObject, namesStart: names.count))
    }

    /// The next member's name, the reader then standing before its value, which must be read or
    /// skipped; nil once the object ends (it is left).
    package mutating func nextMember() throws(JSONError) -> String? {
        guard let name = try nextName() else { return nil }
        // Scanning checked the UTF-8 and the escapes' surrogates.
        return String(decoding: names[name], as: UTF8.self)
    }

    /// Like `nextMember()`, for a caller that looks for a few names: the index of the next
    /// member's name in `names`, or `names.count` for any other name. No string is made.
    package mutating func nextMember(among names: JSONNames) throws(JSONError) -> Int? {
        guard let name = try nextName() else { return nil }
        return self.names.withUnsafeBufferPointer { all in names.index(of: UnsafeBufferPointer(rebasing: all[name])) }
    }

    /// Moves to the next member's value; its name's text (quotes included), its escapes, and its
    /// unescaped bytes as a range of `names`; nil once the object ends.
    private mutating func nextName() throws(JSONError) -> Range<Int>? {
        guard try advance(close: UInt8(ascii: "}"), "expected ',' or '}'") else { return nil }
        let (range, escaped) = try parser.scanString()
        let start = names.count
        let inner = parser.text[range.lowerBound + 1..<range.upperBound - 1]
        if escaped { _ = JSONParser.unescape(inner, into: &names) } else { names.append(contentsOf: inner) }
        let name = start..<names.count
        guard tables[containers.count - 1].insert(name, of: names) else {
            throw .duplicateMember(String(decoding: names[name], as: UTF8.self))
        }
        parser.skipWhitespace()
        try parser.expect(UInt8(ascii: ":"), "expected ':' after a member name")
        return name
    }

    /// Whether the array has another element, the reader then standing before it; false once the
    /// array ends (it is left).
    package mutating func nextElement() throws(JSONError) -> Bool {
        try advance(close: UInt8(ascii: "]"), "expected ',' or ']'")
    }

    /// Moves past the separator before the next member or element; false (leaving the container)
    /// at its end.
    private mutating func advance(close: UInt8, _ reason: String) throws(JSONError) -> Bool {
        parser.skipWhitespace()
        let index = containers.count - 1
        if parser.current == close {
            parser.position += 1
            names.removeSubrange(containers[index].namesStart...)
            containers.removeLast()
            return false
        }
        if containers[index].count > 0 {
            try parser.expect(UInt8(ascii: ","), reason)
            parser.skipWhitespace()
        }
        if containers[index].isObject {
            try parser.checkMembers(containers[index].count)
        } else {
            try parser.checkElements(containers[index].count)
        }
        containers[index].count += 1
        return true
    }

    /// The next value, which must be a string.
    package mutating func string() throws(JSONError) -> String {
        parser.skipWhitespace()
        let (range, escaped) = try parser.scanString()
        guard let value = JSONParser.stringValue(parser.text, range, escaped: escaped) else { throw .invalidUTF8(member: "") }
        return value
    }

    /// The next value, which must be a number: its value if it is an integer that fits `Int64`
    /// (no fraction, no exponent), else nil.
    package mutating func integer() throws(JSONError) -> Int64? {
        parser.skipWhitespace()
        let start = parser.position
        guard try kind() == .number else { throw parser.fail("expected a number") }
        try parser.scanNumber()
        let end = parser.position
        return parser.text.withUnsafeBufferPointer { JSONParser.integerValue(UnsafeBufferPointer(rebasing: $0[start..<end])) }
    }

    /// The next value, which must be `true` or `false`.
    package mutating func bool() throws(JSONError) -> Bool {
        guard try kind() == .bool else { throw parser.fail("expected true or false") }
        let value = parser.current == UInt8(ascii: "t")
        _ = try parser.scanValue(depth: containers.count)
        return value
    }

    /// Skips the next value, whatever it is, checking it like the rest.
    package mutating func skipValue() throws(JSONError) {
        parser.skipWhitespace()
        _ = try parser.scanValue(depth: containers.count)
    }

    /// Checks that the document ended: every container closed, nothing but whitespace after.
    package mutating func end() throws(JSONError) {
        parser.skipWhitespace()
        guard containers.isEmpty, parser.position == parser.text.count else { throw parser.fail("unexpected data after the value") }
    }
}

/// Member names a `JSONReader` caller looks for, kept as UTF-8 so that names are matched without
/// making strings.
package struct JSONNames: Sendable {
    private let names: [[UInt8]]

    package init(_ names: [String]) { self.names = names.map { Array($0.utf8) } }

    package var count: Int { names.count }

    /// The index of `name` (unescaped UTF-8), or `count` when it is none of them.
    func index(of name: UnsafeBufferPointer<UInt8>) -> Int {
        names.firstIndex { known in
            known.count == name.count
                && known.withUnsafeBufferPointer { known.isEmpty || memcmpEqual($0.baseAddress!, name.baseAddress!, name.count) }
        } ?? names.count
    }
}
