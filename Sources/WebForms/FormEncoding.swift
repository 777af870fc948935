/// `application/x-www-form-urlencoded` (WHATWG URL §5.2): everything but `*-._` and
/// alphanumerics is percent-encoded, space as `+`.
package enum FormEncoding {
    package static func encode(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "*"), UInt8(ascii: "-"),
                UInt8(ascii: "."), UInt8(ascii: "_"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "): out += "+"
            default: out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// Decodes a form-encoded field; nil for a broken percent escape or invalid UTF-8.
    package static func decode(_ text: some StringProtocol) -> String? {
        decode(ArraySlice(text.utf8))
    }

    /// The most fields `fields` reads: Apple's form post has four, a token request six, a query
    /// of ours a few; like the members of a JSON object (256), far more than any sender needs.
    package static let maximumFields = 256

    /// The fields of a form-encoded body, in order; nil for a broken escape, invalid UTF-8, or
    /// more than `maximumFields`. Read as bytes, in one pass: `&` and `=` split wherever they are,
    /// as the URL standard's parser does (a `&` before a combining mark is still a separator), and
    /// in time linear in the body.
    package static func fields(_ body: some StringProtocol) -> [(String, String)]? {
        let bytes = Array(body.utf8)
        var fields: [(String, String)] = []
        var start = 0
        for end in 0...bytes.count where end == bytes.count || bytes[end] == UInt8(ascii: "&") {
            defer { start = end + 1 }
            guard end > start else { continue }
            guard fields.count < maximumFields else { return nil }
            let pair = bytes[start..<end]
            let equals = pair.firstIndex(of: UInt8(ascii: "="))
            guard let name = decode(pair[..<(equals ?? end)]), let value = decode(equals.map { pair[($0 + 1)...] } ?? [])
            else { return nil }
            fields.append((name, value))
        }
        return fields
    }

    /// The fields of `form` whose names are in `names`, by name: what a sender says once, such as
    /// Apple's form post.
    /// - Returns: nil when one of `names` comes more than once: which of two would count is not for
    ///   a reader to guess (some take the first, others the last).
    package static func distinct(_ form: [(String, String)], among names: Set<String>) -> [String: String]? {
        var found: [String: String] = [:]
        for (name, value) in form where names.contains(name) {
            guard found.updateValue(value, forKey: name) == nil else { return nil }
        }
        return found
    }

    private static func decode(_ field: ArraySlice<UInt8>) -> String? {
        // Most fields have nothing to decode: made straight from the body, without a copy.
        if !field.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) {
            return String(validating: field, as: UTF8.self)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(field.count)
        var index = field.startIndex
        while index < field.endIndex {
            switch field[index] {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
                index += 1
            case UInt8(ascii: "%"):
                guard index + 2 < field.endIndex, let high = hexDigit(field[index + 1]), let low = hexDigit(field[index + 2])
                else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            case let byte:
                bytes.append(byte)
                index += 1
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
