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

    /// `value` as a JSON string literal.
    package static func quoted(_ value: String) -> String {
        // Most names and values need no escape: copied whole.
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) { return "\"" + value + "\"" }
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += "\\u00" + hexString([UInt8(scalar.value)])
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

extension CompactJWS {
    /// The compact serialization `BASE64URL(header).BASE64URL(claims).BASE64URL(signature)`, with
    /// `sign` given the signing input.
    package static func serialize(header: String, claims: String, sign: ([UInt8]) throws -> [UInt8]) rethrows -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }
}
