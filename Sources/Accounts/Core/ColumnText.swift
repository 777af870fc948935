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
}
