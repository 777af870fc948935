import Server
import Testing

/// The web flow's `return_to` rule.
@Suite struct ReturnToTests {
    @Test("return_to accepts same-origin paths only")
    func returnTo() throws {
        // "/" followed by an emoji modifier or a combining mark is one Character (found by schemathesis).
        for good in ["/", "/account", "/a/b?c=d#e", "/\u{1F3FB}8", "/\u{301}x", "/" + String(repeating: "\u{E9}", count: 511)] {
            #expect(try WebSignInRoutes.sameSitePath(good) == good)
        }
        for bad in [
            "", "account", "//evil.example", "/\\evil.example", "https://evil.example/", "/a\nb", "/a b",
            "/" + String(repeating: "a", count: 512), "//\u{301}evil.example", "/\\\u{301}evil.example",
            // ECMAScript's \s, which the document's pattern excludes, beyond ASCII's spaces.
            "/a\u{3000}b", "/a\u{2028}b", "/a\u{A0}b", "/a\u{FEFF}b", "/a\u{1680}b", "/a\u{202F}b", "/a\tb",
        ] {
            #expect(throws: HTTPError.self, "\(bad)") { try WebSignInRoutes.sameSitePath(bad) }
        }
    }
}
