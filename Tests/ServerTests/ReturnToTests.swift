import FastCGI
import Server
import Testing
import WebForms

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
            // Format characters (Cf) and the other invisible ones: zero-width space, combining
            // grapheme joiner, Mongolian vowel separator, a right-to-left override, a variation selector.
            "/a\u{200B}b", "/a\u{34F}b", "/a\u{180E}b", "/\u{202E}txt.exe", "/a\u{FE0F}", "/\u{E0041}",
            // Slashes in disguise: fullwidth and small solidi, division and fraction slashes, ℀.
            "/\u{FF0F}evil.example", "/\u{FF3C}evil.example", "/a\u{FE68}b", "/a\u{2215}b", "/a\u{2044}b", "/\u{2100}",
        ] {
            #expect(throws: HTTPError.self, "\(bad)") { try WebSignInRoutes.sameSitePath(bad) }
        }
    }

    @Test("return_to goes out percent-encoded: ASCII URI characters and existing escapes as they are, everything else as %XX")
    func location() throws {
        #expect(WebSignInRoutes.location(of: "/account?tab=devices#top") == "/account?tab=devices#top")
        #expect(WebSignInRoutes.location(of: "/caf\u{E9}") == "/caf%C3%A9")
        #expect(WebSignInRoutes.location(of: "/a%2Fb%zz%") == "/a%2Fb%25zz%25")
        #expect(WebSignInRoutes.location(of: "/\u{1F3FB}8\"<>[]^`{|}") == "/%F0%9F%8F%BB8%22%3C%3E%5B%5D%5E%60%7B%7C%7D")
        // The longest path accepted, 512 four-byte characters, stays far below nginx's header buffer.
        let longest = "/" + String(repeating: "\u{1F600}", count: 511)
        #expect(try WebSignInRoutes.sameSitePath(longest) == longest)
        #expect(WebSignInRoutes.location(of: longest).utf8.count == 1 + 511 * 12)
    }

    @Test("GET /auth/web/start with a refused return_to (4 KB, 64 KB, invisible characters) gets a page (400)")
    func refusedStart() throws {
        let app = try BrowserSignInApplication()
        for returnTo in [
            "/" + String(repeating: "a", count: 4095), "/" + String(repeating: "a", count: 65535), "/a\u{200B}b", "/\u{FF0F}x",
        ] {
            let response = app.respond("GET", "/auth/web/start", query: "return_to=" + FormEncoding.encode(returnTo))
            #expect(response.isPage(400, without: [returnTo]), "\(returnTo.prefix(8))")
        }
    }
}
