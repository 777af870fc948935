import Accounts
import Foundation
import Testing

/// Text meets a utf8mb4 VARCHAR column by code points, the unit the column counts.
@Suite struct ColumnTextTests {
    @Test(
        "Combining marks and flags are cut by code points, at a whole character",
        arguments: [
            (String(repeating: "e\u{0301}", count: 100), 100, String(repeating: "e\u{0301}", count: 50)),
            (String(repeating: "🇫🇷", count: 100), 128, String(repeating: "🇫🇷", count: 64)),
            ("ab" + "e\u{0301}", 3, "ab"),
            ("plain", 100, "plain"),
        ])
    func fitted(text: String, maximum: Int, expected: String) {
        let fitted = ColumnText.fitted(text, maximum: maximum)
        #expect(fitted == expected)
        #expect(fitted.unicodeScalars.count <= maximum)
    }

    @Test("A single character longer than the limit is cut inside it")
    func longCharacter() {
        let zalgo = "a" + String(repeating: "\u{0301}", count: 10)
        #expect(ColumnText.fitted(zalgo, maximum: 4).unicodeScalars.count == 4)
    }

    @Test("Trimming white space trims what Foundation's trimmingCharacters trims, at either end only")
    func trimmed() {
        let samples = [
            "", " ", "a", " a ", "\t a@b.c \t", "\u{00A0}x\u{3000}", "\u{2003}\u{2028}", "\n\r x \u{85}\u{2029}", "a b",
            "\u{1680}é\u{0301} ",
            " \u{200B}z\u{200B} ", "\u{0B}\u{0C}y\u{0D}", "🇫🇷 ", "\u{202F}\u{205F}k",
        ]
        // And each code point up to U+3100 (every white space Foundation knows is below it) at either end.
        let each = (0...0x3100).compactMap(Unicode.Scalar.init).map { "\($0)x\($0)" }
        for text in samples + each {
            #expect(ColumnText.trimmed(text) == text.trimmingCharacters(in: .whitespaces), "\(Array(text.unicodeScalars))")
            #expect(
                ColumnText.trimmed(text, newlines: true) == text.trimmingCharacters(in: .whitespacesAndNewlines),
                "\(Array(text.unicodeScalars))")
        }
    }
}
