import Server
import Testing

/// The web flow's `return_to` rule.
@Suite struct ReturnToTests {
    @Test("return_to accepts same-origin paths only")
    func returnTo() throws {
        for good in ["/", "/account", "/a/b?c=d#e"] { #expect(try WebSignIn.sameSitePath(good) == good) }
        for bad in [
            "", "account", "//evil.example", "/\\evil.example", "https://evil.example/", "/a\nb", "/a b",
            "/" + String(repeating: "a", count: 512),
        ] {
            #expect(throws: HTTPError.self, "\(bad)") { try WebSignIn.sameSitePath(bad) }
        }
    }
}
