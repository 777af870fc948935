/// A strictly parsed JSON object (RFC 8259), read lazily: the whole text is validated once, then a
/// member becomes a Swift value only when asked for.
///
/// Built for JOSE headers and claims sets, where `JSONDecoder` costs more than the RSA verification
/// itself (docs/PERFORMANCE.md). Rules beyond RFC 8259, as RFC 7515 §5.2 and RFC 7519 §7.2 allow:
/// duplicate member names are rejected (compared after unescaping, so `"a"` and `"\u0061"` collide),
/// nesting is limited in depth, and strings must be valid UTF-8 without lone surrogates.
package struct JSONObject: Sendable {
    /// The kind of a member's value.
    package enum Kind: Sendable, Equatable {
        case string, number, bool, null, object, array
    }

    struct Member: Sendable {
        /// The unescaped name, as a range of `names`.
        var name: Range<Int>
        var kind: Kind
        /// The value's text in `text`, quotes included for strings.
        var value: Range<Int>
        /// Whether a string value contains a backslash escape.
        var escaped: Bool
    }

    /// The JSON text the object is in: a nested object shares its parent's text, its member ranges point into it.
    let text: [UInt8]
    let members: [Member]
    /// Every member name, unescaped, back to back.
    let names: [UInt8]

    /// Parses `text`, which must be exactly one JSON object with optional surrounding whitespace.
    /// - Throws: `JSONError` naming the offset of the first problem, or the duplicated member.
    package init(parsing text: [UInt8], limits: JSONLimits = .tokens) throws(JSONError) {
        var parser = JSONParser(text: text, limits: limits)
        let (members, names) = try parser.parseTopLevelObject()
        self.init(text: text, members: members, names: names)
    }

    /// An object inside `text` (already checked as a whole): its members' ranges are in `text`,
    /// which is shared, not copied.
    init(text: [UInt8], members: [Member], names: [UInt8]) {
        self.text = text
        self.members = members
        self.names = names
    }

    /// The object that starts at `offset` of `text`, parsed in place (the whole text met its
    /// limits already).
    private func nested(at offset: Int) throws(JSONError) -> JSONObject {
        var parser = JSONParser(text: text, limits: .tokens)
        parser.position = offset
        let (members, names) = try parser.parseObject(depth: 1)
        return JSONObject(text: text, members: members, names: names)
    }

    /// Parses the UTF-8 of `text`.
    package init(parsing text: String, limits: JSONLimits = .tokens) throws(JSONError) {
        try self.init(parsing: Array(text.utf8), limits: limits)
    }

    /// The member names in document order.
    package var keys: [String] {
        members.map { String(decoding: names[$0.name], as: UTF8.self) }
    }

    /// The number of members.
    package var count: Int { members.count }

    private func member(_ name: String) -> Member? {
        var name = name
        return name.withUTF8 { wanted in
            names.withUnsafeBufferPointer { all in
                members.first { member in
                    member.name.count == wanted.count
                        && (wanted.isEmpty || memcmpEqual(all.baseAddress! + member.name.lowerBound, wanted.baseAddress!, wanted.count))
                }
            }
        }
    }

    /// Whether a member called `name` is present (with any value, `null` included).
    package func contains(_ name: String) -> Bool { member(name) != nil }

    /// The kind of the member called `name`, or nil if it is absent.
    package func kind(of name: String) -> Kind? { member(name)?.kind }

    /// The member's string value.
    /// - Returns: nil if the member is absent.
    /// - Throws: `JSONError.typeMismatch` if it is present but not a string.
    package func string(_ name: String) throws(JSONError) -> String? {
        guard let member = member(name) else { return nil }
        guard member.kind == .string else { throw .typeMismatch(member: name, expected: .string) }
        return try decodeString(member, name: name)
    }

    /// The member's numeric value.
    /// - Throws: `JSONError.typeMismatch` if it is present but not a number.
    package func number(_ name: String) throws(JSONError) -> Double? {
        guard let member = member(name) else { return nil }
        guard member.kind == .number else { throw .typeMismatch(member: name, expected: .number) }
        return JSONParser.numberValue(text[member.value])
    }

    /// The member's value if it is an integer: digits, or a fraction or exponent with an integral
    /// value below 2^53 in magnitude (`1.0`, `1e3`).
    /// - Throws: `JSONError.typeMismatch` if it is present but not such a number.
    package func integer(_ name: String) throws(JSONError) -> Int64? {
        guard let member = member(name) else { return nil }
        guard member.kind == .number, let value = JSONParser.integerValue(text[member.value]) else {
            throw .typeMismatch(member: name, expected: .number)
        }
        return value
    }

    /// The member's boolean value.
    /// - Throws: `JSONError.typeMismatch` if it is present but not `true` or `false`.
    package func bool(_ name: String) throws(JSONError) -> Bool? {
        guard let member = member(name) else { return nil }
        guard member.kind == .bool else { throw .typeMismatch(member: name, expected: .bool) }
        return text[member.value.lowerBound] == UInt8(ascii: "t")
    }

    /// The member's object value, parsed with the same rules.
    /// - Throws: `JSONError.typeMismatch` if it is present but not an object.
    package func object(_ name: String) throws(JSONError) -> JSONObject? {
        guard let member = member(name) else { return nil }
        guard member.kind == .object else { throw .typeMismatch(member: name, expected: .object) }
        return try nested(at: member.value.lowerBound)
    }

    /// The elements of the member's array value that are strings.
    /// - Throws: `JSONError.typeMismatch` if it is present but not an array of strings.
    package func stringArray(_ name: String) throws(JSONError) -> [String]? {
        guard let member = member(name) else { return nil }
        guard member.kind == .array else { throw .typeMismatch(member: name, expected: .array) }
        var parser = JSONParser(text: Array(text[member.value]), limits: JSONLimits(depth: 2))
        guard let strings = try parser.parseStringArray() else {
            throw .typeMismatch(member: name, expected: .array)
        }
        return strings
    }

    /// The objects of the array member `name`; nil if absent. An element that is not an object is
    /// reported by its index.
    package func objectArray(_ name: String) throws(JSONError) -> [JSONObject]? {
        guard let member = member(name) else { return nil }
        guard member.kind == .array else { throw .typeMismatch(member: name, expected: .array) }
        var parser = JSONParser(text: text, limits: .tokens)
        parser.position = member.value.lowerBound
        let elements = try parser.parseArrayElements()
        var objects: [JSONObject] = []
        objects.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            guard element.kind == .object else { throw .typeMismatch(member: "\(name)[\(index)]", expected: .object) }
            objects.append(try nested(at: element.range.lowerBound))
        }
        return objects
    }

    private func decodeString(_ member: Member, name: String) throws(JSONError) -> String {
        guard let string = JSONParser.stringValue(text, member.value, escaped: member.escaped) else { throw .invalidUTF8(member: name) }
        return string
    }
}

/// Why a JSON text was refused.
package enum JSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not JSON, or not a single object: `offset` is the first byte that could not be accepted.
    case syntax(offset: Int, reason: String)
    /// Two members share a name.
    case duplicateMember(String)
    /// Deeper than the allowed nesting.
    case tooDeep
    /// An object, array or string larger than the limits allow, at `offset`.
    case tooLarge(offset: Int, reason: String)
    /// A member holds another kind of value than the caller needs.
    case typeMismatch(member: String, expected: JSONObject.Kind)
    /// A string is not valid UTF-8 (or holds a lone surrogate escape).
    case invalidUTF8(member: String)

    package var description: String {
        switch self {
        case .syntax(let offset, let reason): "invalid JSON at byte \(offset): \(reason)"
        case .duplicateMember(let name): "duplicate member \"\(name)\""
        case .tooDeep: "JSON nested too deeply"
        case .tooLarge(let offset, let reason): "\(reason) (at byte \(offset))"
        case .typeMismatch(let member, let expected): "member \"\(member)\" is not a JSON \(expected)"
        case .invalidUTF8(let member): "member \"\(member)\" is not valid UTF-8"
        }
    }
}

/// The scanner behind `JSONObject` and `JSONReader`: one pass over the bytes, no allocation per
/// value, time linear in the text (duplicate names are found through `JSONNameTable`).
struct JSONParser {
    let text: [UInt8]
    let limits: JSONLimits
    var position = 0
    /// The names of the objects `scanContainer` is inside, unescaped, back to back; and for each
    /// depth the table of the names of the object there (kept for the next object at that depth).
    private var scannedNames: [UInt8] = []
    private var scannedTables: [JSONNameTable] = []

    init(text: [UInt8], limits: JSONLimits) {
        self.text = text
        self.limits = limits
    }

    var maximumDepth: Int { limits.depth }

    func fail(_ reason: String) -> JSONError { .syntax(offset: position, reason: reason) }

    func tooLarge(_ reason: String) -> JSONError { .tooLarge(offset: position, reason: reason) }

    /// - Throws: `JSONError.tooLarge` when an object reached its limit of members.
    func checkMembers(_ count: Int) throws(JSONError) {
        guard count < limits.members else { throw tooLarge("an object has more than \(limits.members) members") }
    }

    /// - Throws: `JSONError.tooLarge` when an array reached its limit of elements.
    func checkElements(_ count: Int) throws(JSONError) {
        guard count < limits.elements else { throw tooLarge("an array has more than \(limits.elements) elements") }
    }

    var current: UInt8? { position < text.count ? text[position] : nil }

    mutating func skipWhitespace() {
        while position < text.count {
            switch text[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    mutating func expect(_ byte: UInt8, _ reason: String) throws(JSONError) {
        guard current == byte else { throw fail(reason) }
        position += 1
    }

    mutating func parseTopLevelObject() throws(JSONError) -> ([JSONObject.Member], [UInt8]) {
        skipWhitespace()
        let parsed = try parseObject(depth: 1)
        skipWhitespace()
        guard position == text.count else { throw fail("unexpected data after the object") }
        return parsed
    }

    /// Parses the object at `position`; its members' values are scanned, not parsed. Member
    /// ranges are positions in `text`.
    mutating func parseObject(depth: Int) throws(JSONError) -> ([JSONObject.Member], [UInt8]) {
        guard current == UInt8(ascii: "{") else { throw fail("expected an object") }
        position += 1
        var members: [JSONObject.Member] = []
        var names: [UInt8] = []
        var table = JSONNameTable()
        members.reserveCapacity(16)
        names.reserveCapacity(128)
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            position += 1
        } else {
            while true {
                skipWhitespace()
                try checkMembers(members.count)
                let nameStart = names.count
                let (nameRange, nameEscaped) = try scanString()
                if nameEscaped {
                    guard Self.unescape(text[nameRange.lowerBound + 1..<nameRange.upperBound - 1], into: &names) else {
                        throw fail("invalid escape in a member name")
                    }
                } else {
                    names.append(contentsOf: text[nameRange.lowerBound + 1..<nameRange.upperBound - 1])
                }
                let name = nameStart..<names.count
                guard table.insert(name, of: names) else { throw .duplicateMember(String(decoding: names[name], as: UTF8.self)) }
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "expected ':' after a member name")
                skipWhitespace()
                let valueStart = position
                let (kind, escaped) = try scanValue(depth: depth)
                members.append(.init(name: name, kind: kind, value: valueStart..<position, escaped: escaped))
                skipWhitespace()
                if current == UInt8(ascii: ",") {
                    position += 1
                    continue
                }
                try expect(UInt8(ascii: "}"), "expected ',' or '}'")
                break
            }
        }
        return (members, names)
    }

    /// Parses a whole text that must be an array of strings; nil if an element is not a string.
    mutating func parseStringArray() throws(JSONError) -> [String]? {
        skipWhitespace()
        try expect(UInt8(ascii: "["), "expected an array")
        var strings: [String] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { return strings }
        while true {
            skipWhitespace()
            try checkElements(strings.count)
            guard current == UInt8(ascii: "\"") else { return nil }
            let (range, escaped) = try scanString()
            var bytes: [UInt8] = []
            let inner = text[range.lowerBound + 1..<range.upperBound - 1]
            if escaped { _ = Self.unescape(inner, into: &bytes) } else { bytes = Array(inner) }
            guard let string = String(validating: bytes, as: UTF8.self) else { return nil }
            strings.append(string)
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "]"), "expected ',' or ']'")
            return strings
        }
    }

    /// Parses a whole text that must be an array; returns each element's kind and byte range.
    mutating func parseArrayElements() throws(JSONError) -> [(kind: JSONObject.Kind, range: Range<Int>)] {
        skipWhitespace()
        try expect(UInt8(ascii: "["), "expected an array")
        var elements: [(kind: JSONObject.Kind, range: Range<Int>)] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") { return elements }
        while true {
            skipWhitespace()
            try checkElements(elements.count)
            let start = position
            let (kind, _) = try scanValue(depth: 1)
            elements.append((kind, start..<position))
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(UInt8(ascii: "]"), "expected ',' or ']'")
            return elements
        }
    }

    /// Scans any value; returns its kind and, for strings, whether it has escapes.
    mutating func scanValue(depth: Int) throws(JSONError) -> (JSONObject.Kind, Bool) {
        guard let byte = current else { throw fail("expected a value") }
        switch byte {
        case UInt8(ascii: "\""):
            return (.string, try scanString().escaped)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            guard depth < maximumDepth else { throw .tooDeep }
            try scanContainer(depth: depth + 1)
            return (byte == UInt8(ascii: "{") ? .object : .array, false)
        case UInt8(ascii: "t"):
            try scanLiteral("true")
            return (.bool, false)
        case UInt8(ascii: "f"):
            try scanLiteral("false")
            return (.bool, false)
        case UInt8(ascii: "n"):
            try scanLiteral("null")
            return (.null, false)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try scanNumber()
            return (.number, false)
        default:
            throw fail("expected a value")
        }
    }

    /// Scans a nested object or array, checking duplicate names in nested objects too.
    private mutating func scanContainer(depth: Int) throws(JSONError) {
        let isObject = text[position] == UInt8(ascii: "{")
        let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
        position += 1
        skipWhitespace()
        if current == close {
            position += 1
            return
        }
        let namesStart = scannedNames.count
        while scannedTables.count <= depth { scannedTables.append(JSONNameTable()) }
        scannedTables[depth].removeAll()
        defer {
            scannedNames.removeSubrange(namesStart...)
            scannedTables[depth].removeAll()
        }
        var count = 0
        while true {
            skipWhitespace()
            if isObject {
                try checkMembers(count)
                let (range, escaped) = try scanString()
                let nameStart = scannedNames.count
                let inner = text[range.lowerBound + 1..<range.upperBound - 1]
                if escaped { _ = Self.unescape(inner, into: &scannedNames) } else { scannedNames.append(contentsOf: inner) }
                let name = nameStart..<scannedNames.count
                guard scannedTables[depth].insert(name, of: scannedNames) else {
                    throw .duplicateMember(String(decoding: scannedNames[name], as: UTF8.self))
                }
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "expected ':' after a member name")
                skipWhitespace()
            } else {
                try checkElements(count)
            }
            count += 1
            _ = try scanValue(depth: depth)
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                position += 1
                continue
            }
            try expect(close, isObject ? "expected ',' or '}'" : "expected ',' or ']'")
            return
        }
    }

    private mutating func scanLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        guard position + count <= text.count else { throw fail("truncated literal") }
        for index in 0..<count where text[position + index] != literal.utf8Start[index] {
            throw fail("invalid literal")
        }
        position += count
    }

    private mutating func scanDigits() -> Int {
        let start = position
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        return position - start
    }

    mutating func scanNumber() throws(JSONError) {
        let start = position
        try scanNumberText()
        guard position - start <= limits.numberBytes else {
            throw .tooLarge(offset: start, reason: "a number is longer than \(limits.numberBytes) bytes")
        }
    }

    private mutating func scanNumberText() throws(JSONError) {
        if current == UInt8(ascii: "-") { position += 1 }
        if current == UInt8(ascii: "0") {
            position += 1
        } else if scanDigits() == 0 {
            throw fail("invalid number")
        }
        if current == UInt8(ascii: ".") {
            position += 1
            guard scanDigits() > 0 else { throw fail("invalid number fraction") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard scanDigits() > 0 else { throw fail("invalid number exponent") }
        }
    }

    /// Scans a string starting at the opening quote; returns its range (quotes included).
    mutating func scanString() throws(JSONError) -> (range: Range<Int>, escaped: Bool) {
        guard current == UInt8(ascii: "\"") else { throw fail("expected a string") }
        let start = position
        position += 1
        var escaped = false
        // The scan stops where the longest string allowed would have its closing quote.
        let end = limits.stringBytes < text.count - position ? position + limits.stringBytes + 1 : text.count
        while position < end {
            // A run of printable ASCII other than the quote and the backslash (most of any string)
            // is passed over through a pointer, without an index check per byte.
            let runStart = position
            position = text.withUnsafeBufferPointer { bytes in
                var index = runStart
                while index < end {
                    let byte = bytes[index]
                    if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                    index += 1
                }
                return index
            }
            guard position < end else { break }
            let byte = text[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return (start..<position, escaped)
            }
            if byte < 0x20 { throw fail("control character in a string") }
            if byte >= 0x80 {
                // Every string is checked, also those a reader skips and member names.
                guard let length = Self.utf8SequenceLength(text, at: position) else { throw fail("invalid UTF-8 in a string") }
                position += length
                continue
            }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 1
                guard let next = current else { break }
                switch next {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                    UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    position += 1
                case UInt8(ascii: "u"):
                    guard let unit = hex4(at: position + 1) else { throw fail("invalid \\u escape") }
                    position += 5
                    if (0xDC00...0xDFFF).contains(unit) { throw fail("a lone low surrogate escape") }
                    if (0xD800...0xDBFF).contains(unit) {
                        guard current == UInt8(ascii: "\\"), position + 1 < text.count, text[position + 1] == UInt8(ascii: "u"),
                            let low = hex4(at: position + 2), (0xDC00...0xDFFF).contains(low)
                        else { throw fail("a lone high surrogate escape") }
                        position += 6
                    }
                default:
                    throw fail("invalid escape")
                }
                continue
            }
            position += 1
        }
        if end < text.count { throw .tooLarge(offset: start, reason: "a string is longer than \(limits.stringBytes) bytes") }
        throw fail("unterminated string")
    }

    /// The four hex digits at `offset` as a UTF-16 code unit; nil if they are not four hex digits.
    private func hex4(at offset: Int) -> UInt32? {
        guard offset + 4 <= text.count else { return nil }
        var value: UInt32 = 0
        for byte in text[offset..<offset + 4] {
            guard let digit = Self.hexValue(byte) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    /// The length of the well-formed UTF-8 sequence starting at `offset` with a byte >= 0x80, or
    /// nil (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
    static func utf8SequenceLength(_ text: [UInt8], at offset: Int) -> Int? {
        let lead = text[offset]
        let length: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: (length, low) = (3, 0xA0)
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: (length, high) = (3, 0x9F)
        case 0xF0: (length, low) = (4, 0x90)
        case 0xF1...0xF3: length = 4
        case 0xF4: (length, high) = (4, 0x8F)
        default: return nil
        }
        guard offset + length <= text.count, (low...high).contains(text[offset + 1]) else { return nil }
        for index in offset + 2..<offset + length where !(0x80...0xBF).contains(text[index]) { return nil }
        return length
    }

    /// The value of the string scanned at `range` of `text` (quotes included); nil if it is not
    /// valid UTF-8 or holds a lone surrogate escape. Scanning already refused control characters.
    static func stringValue(_ text: [UInt8], _ range: Range<Int>, escaped: Bool) -> String? {
        let inner = range.lowerBound + 1..<range.upperBound - 1
        if !escaped {
            return text.withUnsafeBufferPointer { all in
                let bytes = UnsafeBufferPointer(rebasing: all[inner])
                // ASCII is valid UTF-8; `String(validating:as:)` is not specialized and looks its
                // generic types up at run time, which cost a quarter of reading a sync's body.
                if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
                return String(validating: bytes, as: UTF8.self)
            }
        }
        var output: [UInt8] = []
        guard unescape(text[inner], into: &output) else { return nil }
        return String(validating: output, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// Appends the unescaped UTF-8 of a scanned string body to `output`.
    /// - Returns: false for a lone or reversed surrogate escape.
    static func unescape(_ body: ArraySlice<UInt8>, into output: inout [UInt8]) -> Bool {
        var index = body.startIndex
        func hex4(_ at: Int) -> UInt32 {
            body[at..<at + 4].reduce(0) { $0 << 4 | hexValue($1)! }
        }
        while index < body.endIndex {
            let byte = body[index]
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                index += 1
                continue
            }
            let kind = body[index + 1]
            index += 2
            switch kind {
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(index)
                index += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    guard index + 6 <= body.endIndex, body[index] == UInt8(ascii: "\\"),
                        body[index + 1] == UInt8(ascii: "u")
                    else { return false }
                    let low = hex4(index + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { return false }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    return false
                }
                appendUTF8(scalar, to: &output)
            default: output.append(kind)
            }
        }
        return true
    }

    /// Appends the UTF-8 of the scalar `value` (not a surrogate) without making a string.
    @inline(__always)
    static func appendUTF8(_ value: UInt32, to output: inout [UInt8]) {
        switch value {
        case 0..<0x80:
            output.append(UInt8(value))
        case 0x80..<0x800:
            output.append(UInt8(0xC0 | value >> 6))
            output.append(UInt8(0x80 | value & 0x3F))
        case 0x800..<0x10000:
            output.append(UInt8(0xE0 | value >> 12))
            output.append(UInt8(0x80 | value >> 6 & 0x3F))
            output.append(UInt8(0x80 | value & 0x3F))
        default:
            output.append(UInt8(0xF0 | value >> 18))
            output.append(UInt8(0x80 | value >> 12 & 0x3F))
            output.append(UInt8(0x80 | value >> 6 & 0x3F))
            output.append(UInt8(0x80 | value & 0x3F))
        }
    }

    /// The value of a scanned number.
    static func numberValue(_ bytes: ArraySlice<UInt8>) -> Double {
        if let integer = integerValue(bytes) { return Double(integer) }
        return Double(String(decoding: bytes, as: UTF8.self)) ?? .nan
    }

    /// The value of a scanned number that is an integer within `Int64`, else nil.
    static func integerValue(_ bytes: ArraySlice<UInt8>) -> Int64? {
        bytes.withUnsafeBufferPointer { integerValue($0) }
    }

    /// 2^53: every integer below it has a double of its own (2^53 + 1 reads as 2^53).
    static let exactIntegers = 9_007_199_254_740_992.0

    /// An integer written in digits (up to 18 of them), or a number with a fraction or an exponent
    /// whose value is an integer below 2^53 in magnitude (`7923.0`, `1e3`): JSON does not tell integers from
    /// other numbers, and JSON Schema's `integer` takes both; nil for any other number.
    static func integerValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = bytes.startIndex
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let digits = index
        var value: Int64 = 0
        while index < bytes.endIndex {
            let byte = bytes[index]
            // 18 digits always fit in Int64; a 19th could overflow it.
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), index - digits < 18 else {
                return integralValue(bytes)
            }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            index += 1
        }
        return negative ? -value : value
    }

    /// A number with a fraction, an exponent or many digits, when its value is an integer that a
    /// double holds exactly.
    private static func integralValue(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard let value = Double(String(decoding: bytes, as: UTF8.self)), value.rounded(.towardZero) == value,
            abs(value) < exactIntegers
        else { return nil }
        return Int64(value)
    }
}

/// Byte equality of two buffers of `count` bytes.
@inline(__always)
func memcmpEqual(_ lhs: UnsafePointer<UInt8>, _ rhs: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    for index in 0..<count where lhs[index] != rhs[index] { return false }
    return true
}
