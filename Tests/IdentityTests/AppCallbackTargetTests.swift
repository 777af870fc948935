import Foundation
import Identity
import Testing

/// Where Apple's form post for an Android or Flutter app is sent on: only the configured forms
/// parse, and the fields never leave the query.
@Suite struct AppCallbackTargetTests {
    @Test("intent:PACKAGE, https App Links and custom schemes parse; the web's and a browser's own schemes do not")
    func configuredForms() {
        #expect(AppCallbackTarget(configured: "intent:com.example.app") == .androidIntent(package: "com.example.app"))
        #expect(AppCallbackTarget(configured: "https://app.example.com/apple?x=1") == .url("https://app.example.com/apple?x=1"))
        #expect(AppCallbackTarget(configured: "com.example.app:/apple") == .url("com.example.app:/apple"))
        for refused in [
            "intent:", "intent:app", "intent:com.example.app;end", "intent:com..app", "intent:1com.app", "http://app.example.com/",
            "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,x", "file:///etc/passwd", "intent://callback#Intent;end",
            "https:///nohost", "https://app.example.com/#fragment", "myapp:/a b", "app", "", ":x", "1app:/x", "vbscript:x",
        ] {
            #expect(AppCallbackTarget(configured: refused) == nil, "\(refused)")
        }
    }

    @Test("An app's redirect URI: a private-use scheme, loopback (any port at sign-in, nothing else) or https; compared exactly")
    func redirectURIs() throws {
        for refused in [
            "http://localhost/cb", "http://127.0.0.1:8000/cb", "http://example.com/cb", "https://example.com/#x", "javascript:x",
            "data:text/html,x", "intent://callback", "https:///cb", "com.example.app:/a b", "",
        ] {
            #expect(AppRedirectURI(configured: refused) == nil, "\(refused)")
        }
        let loopback = try #require(AppRedirectURI(configured: "http://127.0.0.1/cb"))
        for (requested, matches) in [
            ("http://127.0.0.1/cb", true), ("http://127.0.0.1:53682/cb", true), ("http://127.0.0.1:65535/cb", true),
            ("http://127.0.0.1:0/cb", false), ("http://127.0.0.1:65536/cb", false), ("http://127.0.0.1:80@evil.example/cb", false),
            ("http://127.0.0.1.evil.example/cb", false), ("http://127.0.0.1:5/cbx", false), ("http://127.0.0.1:5/cb/../x", false),
            ("https://127.0.0.1:5/cb", false), ("http://[::1]:5/cb", false),
        ] {
            #expect(loopback.matches(requested) == matches, "\(requested)")
        }
        let scheme = try #require(AppRedirectURI(configured: "com.example.app:/apple"))
        #expect(
            scheme.matches("com.example.app:/apple") && !scheme.matches("com.example.app:/apple/x")
                && !scheme.matches("COM.example.app:/apple"))
    }

    @Test("The intent carries the fields in its query, percent-encoded: a value cannot end the query or name another package")
    func location() throws {
        let intent = AppCallbackTarget.androidIntent(package: "com.example.app")
        let fields = [("state", "x#Intent;package=evil.pkg;end"), ("user", #"{"name":{"firstName":"Zoë"}}"#), ("code", "c&d=e")]
        let location = intent.location(carrying: fields)
        #expect(location.components(separatedBy: "#").count == 2, "\(location)")
        #expect(location.hasSuffix("#Intent;package=com.example.app;scheme=signinwithapple;end"))
        #expect(location.hasPrefix("intent://callback?state=x%23Intent%3Bpackage%3Devil.pkg%3Bend&user="))
        let query = try #require(
            URLComponents(string: "https://x/?" + location.dropFirst("intent://callback?".count).split(separator: "#")[0]))
        let decoded = (query.percentEncodedQueryItems ?? []).map {
            ($0.name, $0.value?.replacingOccurrences(of: "+", with: " ").removingPercentEncoding)
        }
        #expect(decoded.map(\.0) == ["state", "user", "code"])
        #expect(decoded.map(\.1) == fields.map(\.1))
        #expect(
            AppCallbackTarget.url("https://app.example.com/a?from=siwa").location(carrying: [("code", "c")])
                == "https://app.example.com/a?from=siwa&code=c")
        #expect(
            AppCallbackTarget.url("com.example.app:/apple").location(carrying: [("error", "user_cancelled_authorize")])
                == "com.example.app:/apple?error=user_cancelled_authorize")
    }
}
