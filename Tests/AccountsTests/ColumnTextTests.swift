import Accounts
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
}
