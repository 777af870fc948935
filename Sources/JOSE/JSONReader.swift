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
        /// No member or element was read yet.
        var isEmpty = true
    }

    private var parser: JSONParser
    private var containers: [Container] = []
    /// The member names of the objects being read, as ranges of the text (quotes included).
    private var names: [(range: Range<Int>, escaped: Bool)] = []

    package init(_ text: [UInt8], maximumDepth: Int = 16) {
        parser = JSONParser(text: text, maximumDepth: maximumDepth)
        containers.reserveCapacity(maximumDepth)
        names.reserveCapacity(32)
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
        containers.append(Container(isObject: isObject, namesStart: names.count))
    }

    /// The next member's name, the reader then standing before its value, which must be read or
    /// skipped; nil once the object ends (it is left).
    package mutating func nextMember() throws(JSONError) -> String? {
        guard let (range, escaped) = try nextName() else { return nil }
        guard let name = JSONParser.stringValue(parser.text, range, escaped: escaped) else { throw parser.fail("invalid member name") }
        return name
    }

    /// Like `nextMember()`, for a caller that looks for a few names: the index of the next
    /// member's name in `names`, or `names.count` for any other name. No string is made.
    package mutating func nextMember(among names: JSONNames) throws(JSONError) -> Int? {
        guard let (range, escaped) = try nextName() else { return nil }
        if escaped {
            guard let name = JSONParser.stringValue(parser.text, range, escaped: true) else { throw parser.fail("invalid member name") }
            return Array(name.utf8).withUnsafeBufferPointer { names.index(of: $0) }
        }
        return parser.text.withUnsafeBufferPointer { text in
            names.index(of: UnsafeBufferPointer(rebasing: text[range.lowerBound + 1..<range.upperBound - 1]))
        }
    }

    /// Moves to the next member's value; its name's range (quotes included) and whether it holds
    /// escapes, or nil once the object ends.
    private mutating func nextName() throws(JSONError) -> (Range<Int>, Bool)? {
        guard try advance(close: UInt8(ascii: "}"), "expected ',' or '}'") else { return nil }
        let (range, escaped) = try parser.scanString()
        // By index, and bytes compared in place: no slice or copy of the text per comparison.
        for index in containers[containers.count - 1].namesStart..<names.count
        where Self.sameName(parser.text, names[index].range, names[index].escaped, range, escaped) {
            throw .duplicateMember(JSONParser.stringValue(parser.text, range, escaped: escaped) ?? "")
        }
        names.append((range, escaped))
        parser.skipWhitespace()
        try parser.expect(UInt8(ascii: ":"), "expected ':' after a member name")
        return (range, escaped)
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
        if containers[index].isEmpty {
            containers[index].isEmpty = false
        } else {
            try parser.expect(UInt8(ascii: ","), reason)
            parser.skipWhitespace()
        }
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

    private static func sameName(_ text: [UInt8], _ a: Range<Int>, _ aEscaped: Bool, _ b: Range<Int>, _ bEscaped: Bool) -> Bool {
        if !aEscaped && !bEscaped {
            guard a.count == b.count else { return false }
            return text.withUnsafeBufferPointer { memcmpEqual($0.baseAddress! + a.lowerBound, $0.baseAddress! + b.lowerBound, a.count) }
        }
        return JSONParser.stringValue(text, a, escaped: aEscaped) == JSONParser.stringValue(text, b, escaped: bEscaped)
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
