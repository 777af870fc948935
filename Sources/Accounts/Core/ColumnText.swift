/// Text cut to fit a `VARCHAR(n)` column of utf8mb4, which counts Unicode code points, not the
/// user-perceived characters a Swift `String` counts: "é" written as `e` + U+0301 is one
/// `Character` and two code points, a flag is one `Character` and two code points.
package enum ColumnText {
    /// `text` cut to at most `maximum` code points, at the last whole character that fits; a single
    /// character longer than the whole limit is cut inside.
    package static func fitted(_ text: String, maximum: Int) -> String {
        guard text.unicodeScalars.count > maximum else { return text }
        var kept = 0
        var end = text.startIndex
        for index in text.indices {
            let scalars = text[index].unicodeScalars.count
            guard kept + scalars <= maximum else { break }
            kept += scalars
            end = text.index(after: index)
        }
        if kept == 0 { return String(String.UnicodeScalarView(text.unicodeScalars.prefix(maximum))) }
        return String(text[..<end])
    }

    /// `text` without the white space at either end: `CharacterSet.whitespaces` (U+0009, the space
    /// separators, Zs, and U+200B), and with `newlines` also `.newlines` (U+000A to U+000D, U+0085,
    /// U+2028, U+2029), as `trimmingCharacters(in:)` trims them. That one goes through `NSString`
    /// on Linux and was about 2 % of siwa's CPU in a new user's sign-in, which trims the email
    /// (docs/PERFORMANCE.md).
    package static func trimmed(_ text: String, newlines: Bool = false) -> String {
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x09, 0x20, 0x200B: return true
            case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return newlines
            case 0...0x9F: return false
            default: return scalar.properties.generalCategory == .spaceSeparator
            }
        }
        let scalars = text.unicodeScalars
        guard let first = scalars.first, let last = scalars.last, isSpace(first) || isSpace(last) else { return text }
        guard let start = scalars.firstIndex(where: { !isSpace($0) }), let end = scalars.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(scalars[start...end])
    }
}
