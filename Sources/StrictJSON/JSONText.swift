/// JSON text for the few documents we make ourselves (JWT headers and claims, Apple-shaped
/// responses), with members in the order given: Apple's documents have a fixed order, and tests
/// compare shapes with real captures.
package enum JSONText {
    /// A member value.
    package enum Value: Sendable {
        case string(String)
        case integer(Int64)
        case bool(Bool)
        /// JSON text inserted as it is (a nested object made with `object`).
        case raw(String)
    }

    /// Whether `byte` stands in a JSON string as it is (no control character, quote or backslash).
    static func needsNoEscape(_ byte: UInt8) -> Bool { byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") }

    /// `value` as a JSON string literal.
    package static func quoted(_ value: String) -> String {
        // Most names and values need no escape: copied whole.
        if value.utf8.allSatisfy(needsNoEscape) { return "\"" + value + "\"" }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let digits = Array("0123456789abcdef")
                out += "\\u00" + String(digits[Int(scalar.value >> 4)]) + String(digits[Int(scalar.value & 0xf)])
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// A JSON object of `members` in order; members whose value is nil are left out.
    package static func object(_ members: [(String, Value?)]) -> String {
        var out = "{"
        var first = true
        for (name, value) in members {
            guard let value else { continue }
            if !first { out += "," }
            first = false
            out += quoted(name) + ":"
            switch value {
            case .string(let text): out += quoted(text)
            case .integer(let number): out += String(number)
            case .bool(let flag): out += flag ? "true" : "false"
            case .raw(let text): out += text
            }
        }
        return out + "}"
    }
}

/// JSON written straight into bytes, for answers made often enough that building each member as a
/// string first would matter (a sync's delta). Members and elements are separated as they come.
///
///     var writer = JSONWriter()
///     writer.beginObject()
///     writer.key("cursor"); writer.string("42")
///     writer.endObject()
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Whether the next member or element needs a comma before it.
    private var needsComma = false

    package init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func quoted(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            if utf8.allSatisfy(JSONText.needsNoEscape) {
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: utf8)
                bytes.append(UInt8(ascii: "\""))
            } else {
                bytes.append(contentsOf: JSONText.quoted(String(decoding: utf8, as: UTF8.self)).utf8)
            }
        }
    }

    /// Opens an object or an array: `{` or `[`.
    private mutating func open(_ bracket: Unicode.Scalar) {
        separate()
        bytes.append(UInt8(ascii: bracket))
        needsComma = false
    }

    /// Closes an object or an array: `}` or `]`.
    private mutating func close(_ bracket: Unicode.Scalar) {
        bytes.append(UInt8(ascii: bracket))
        needsComma = true
    }

    package mutating func beginObject() { open("{") }

    package mutating func endObject() { close("}") }

    package mutating func beginArray() { open("[") }

    package mutating func endArray() { close("]") }

    /// A member's name; its value comes next.
    package mutating func key(_ name: String) {
        separate()
        quoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A member's name quoted ahead of time; its value comes next.
    package mutating func key(_ name: JSONKey) {
        separate()
        bytes.append(contentsOf: name.quoted)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    package mutating func string(_ value: String) {
        separate()
        quoted(value)
        needsComma = true
    }

    package mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    package mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    package mutating func null() {
        separate()
        bytes.append(contentsOf: "null".utf8)
        needsComma = true
    }

    /// A member whose value is a string, or `null` for nil.
    package mutating func member(_ name: String, _ value: String?) {
        key(name)
        if let value { string(value) } else { null() }
    }

    /// A member whose value is an integer, or `null` for nil.
    package mutating func member(_ name: String, _ value: Int64?) {
        key(name)
        if let value { integer(value) } else { null() }
    }

    package mutating func member(_ name: String, _ value: Bool) {
        key(name)
        bool(value)
    }
}
