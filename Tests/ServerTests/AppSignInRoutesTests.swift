import FastCGI
import Server
import Testing
import WebForms

/// `GET /auth/app/start`: what goes back to the app's redirect URI, and what never does.
@Suite struct AppSignInRoutesTests {
    /// The start's query for the test client, with `state` (none when nil) and `method`.
    static func query(state: String?, method: String = "S256") -> String {
        var fields = [
            ("client_id", BrowserSignInApplication.appClient.id), ("redirect_uri", "http://127.0.0.1:53682/callback"),
            ("code_challenge", String(repeating: "A", count: 43)), ("code_challenge_method", method),
        ]
        if let state { fields.append(("state", state)) }
        return fields.map { "\($0.0)=\(FormEncoding.encode($0.1))" }.joined(separator: "&")
    }

    @Test("A state of 4 KB or 64 KB gets a page (400), never a redirect that carries it")
    func oversizedState() throws {
        let app = try BrowserSignInApplication()
        for size in [513, 4096, 65536] {
            let state = String(repeating: "s", count: size)
            #expect(app.respond("GET", "/auth/app/start", query: Self.query(state: state)).isPage(400, without: [state]), "\(size) bytes")
        }
    }

    @Test("Other errors go back to the app with error=invalid_request, and the state only when there is one")
    func backToTheApp() throws {
        let app = try BrowserSignInApplication()
        let state = String(repeating: "\u{E9}", count: 256)  // 512 bytes, the longest
        let plain = app.respond("GET", "/auth/app/start", query: Self.query(state: state, method: "plain"))
        #expect(plain.status == 302)
        let location = try #require(plain.values(of: "Location").first)
        #expect(
            location.hasPrefix("http://127.0.0.1:53682/callback?error=invalid_request&")
                && location.hasSuffix("&state=" + FormEncoding.encode(state)))
        for missing in [nil, ""] {
            let response = app.respond("GET", "/auth/app/start", query: Self.query(state: missing))
            #expect(response.status == 302)
            #expect(response.values(of: "Location").first.map { $0.contains("error=invalid_request") && !$0.contains("state=") } == true)
        }
    }
}
