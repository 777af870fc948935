import FastCGI
import Server
import Testing
import WebForms

/// `POST /auth/app-callback/{app}`: Apple's form post, and nothing else, relayed to the app.
@Suite struct AppCallbackRoutesTests {
    static let form = "application/x-www-form-urlencoded"
    /// An identity token's shape and size, as Apple posts one.
    static let idToken =
        "eyJraWQiOiJZdXlYb1kiLCJhbGciOiJSUzI1NiJ9." + String(repeating: "eyJpc3Mi", count: 80) + "." + String(repeating: "c2ln", count: 86)

    /// `fields` form-encoded, in order.
    static func encoded(_ fields: [(String, String)]) -> String {
        fields.map { "\(FormEncoding.encode($0.0))=\(FormEncoding.encode($0.1))" }.joined(separator: "&")
    }

    @Test("Apple's form post: 303 to the app with Apple's fields only, no content type for the empty body")
    func relayed() throws {
        let app = try BrowserSignInApplication()
        let user = #"{"name":{"firstName":"Zoë","lastName":"Dash"},"email":"z@example.com"}"#
        let body = Self.encoded([
            ("state", "st 1"), ("code", "c1.0.abcd.x-Y_z"), ("id_token", Self.idToken), ("user", user), ("extra", "x"),
        ])
        let response = app.respond("POST", "/auth/app-callback/flutter", contentType: Self.form, body: body)
        #expect(response.status == 303)
        let expected =
            "intent://callback?state=st+1&code=c1.0.abcd.x-Y_z&id_token=\(Self.idToken)&user=\(FormEncoding.encode(user))"
            + "#Intent;package=com.example.flutter;scheme=signinwithapple;end"
        #expect(response.values(of: "Location") == [expected])
        #expect(response.values(of: "Cache-Control") == ["no-store"])
        // nginx adds the security headers; siwa repeats none of them, and says no type for no body.
        let block = String(decoding: response.headerBlock(), as: UTF8.self)
        #expect(!block.contains("Content-Type") && !block.contains("Referrer-Policy"))
        // Apple's error alone is relayed too (the person cancelled).
        let cancelled = app.respond(
            "POST", "/auth/app-callback/links", contentType: Self.form, body: "error=user_cancelled_authorize&state=s")
        #expect(cancelled.status == 303)
        #expect(cancelled.values(of: "Location") == ["https://app.example.com/apple?from=siwa&error=user_cancelled_authorize&state=s"])
    }

    @Test("A body that is not Apple's form post gets a page, never a redirect: JSON, empty, repeated or missing fields")
    func refused() throws {
        let app = try BrowserSignInApplication()
        let relay = "/auth/app-callback/flutter"
        #expect(app.respond("POST", relay, contentType: "application/json", body: #"{"code":"c"}"#).isPage(415))
        #expect(app.respond("POST", relay, body: "code=c&id_token=t").isPage(415))
        #expect(app.respond("POST", relay, contentType: Self.form, body: #"{"code":"c"}"#).isPage(400))
        #expect(app.respond("POST", relay, contentType: Self.form).isPage(400))
        #expect(app.respond("POST", relay, contentType: "application/x-www-form-urlencoded; charset=UTF-8").isPage(400))
        for body in [
            "state=a&state=b&code=c&id_token=t", "code=c&id_token=t&code=d", "error=x&user=u1&user=u2", "code=c", "id_token=t",
            "state=s", "code=&id_token=t&state=s", "code=c%0d%0aX&id_token=t", "code=c&id_token=t%3Cscript", "error=a%20b",
        ] {
            #expect(
                app.respond("POST", relay, contentType: Self.form, body: body).isPage(400, without: ["script", "u2", "%0d"]), "\(body)")
        }
        #expect(app.respond("POST", "/auth/app-callback/nobody", contentType: Self.form, body: "code=c&id_token=t").isPage(404))
    }

    @Test("Each relayed field at 4 KB and 64 KB gets a page (400, 413), never a redirect or a 5xx")
    func oversized() throws {
        let app = try BrowserSignInApplication()
        for name in ["code", "id_token", "state", "user", "error"] {
            for size in [4096, 65536] {
                let value = String(repeating: "A", count: size)
                var fields = [("code", "c"), ("id_token", Self.idToken), ("state", "s")].filter { $0.0 != name }
                fields.append((name, value))
                let response = app.respond("POST", "/auth/app-callback/flutter", contentType: Self.form, body: Self.encoded(fields))
                #expect(response.isPage(size > 32 * 1024 ? 413 : 400, without: [value]), "\(name) of \(size) bytes")
            }
        }
    }

    @Test("Each field is relayed up to its limit and refused one byte over; the longest relay stays far below 32 KiB")
    func longestRelay() throws {
        let app = try BrowserSignInApplication()
        // The limits docs/openapi.yaml states, in bytes.
        let limits = ["code": 1024, "id_token": 3072, "state": 512, "user": 2048, "error": 64]
        // Every field at its limit, state and user in characters that are percent-encoded.
        func fields(over name: String? = nil) -> [(String, String)] {
            limits.map { field, limit in
                (field, String(repeating: ["state", "user"].contains(field) ? "\"" : "A", count: field == name ? limit + 1 : limit))
            }
        }
        let response = app.respond("POST", "/auth/app-callback/links", contentType: Self.form, body: Self.encoded(fields()))
        #expect(response.status == 303)
        let location = try #require(response.values(of: "Location").first)
        #expect(location.utf8.count < 12 * 1024)
        for name in limits.keys {
            let body = Self.encoded(fields(over: name))
            #expect(app.respond("POST", "/auth/app-callback/links", contentType: Self.form, body: body).isPage(400), "\(name)")
        }
    }
}
