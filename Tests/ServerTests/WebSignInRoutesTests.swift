import FastCGI
import Server
import Testing

/// `POST /auth/callback`: what is refused before the database.
@Suite struct WebSignInRoutesTests {
    @Test("Apple's callback takes a form only (415 page) and refuses a repeated field (400 page), never redirecting")
    func callbackForm() throws {
        let app = try BrowserSignInApplication()
        let json = app.respond("POST", "/auth/callback", contentType: "application/json", body: #"{"state":"s","code":"c"}"#)
        #expect(json.isPage(415))
        #expect(app.respond("POST", "/auth/callback", body: "state=s&code=c&id_token=t").isPage(415))
        // States of the shape of ours (43 base64url characters), so that only the repetition refuses them.
        let state = String(repeating: "A", count: 43)
        for body in [
            "state=\(state)&state=B\(state.dropFirst())&code=c&id_token=t", "state=\(state)&code=c&id_token=t&id_token=u",
            "state=\(state)&error=a&error=b",
        ] {
            let response = app.respond("POST", "/auth/callback", contentType: "application/x-www-form-urlencoded", body: body)
            #expect(response.isPage(400), "\(body)")
        }
    }
}
