import FastCGI
import Server
import Testing

/// `SIWA_CORS_ORIGINS`: the answers siwa gives a page of another origin, through the worker.
@Suite struct CrossOriginTests {
    static let listed = "https://app.example.com"
    static let webview = "capacitor://localhost"
    static let unlisted = "https://evil.example.net"

    static func application() throws -> BrowserSignInApplication {
        try BrowserSignInApplication(["SIWA_CORS_ORIGINS": "\(listed), \(webview)"])
    }

    @Test("A listed origin's preflight: 204 with the path's methods, the two headers, a max age, and no credentials")
    func preflight() throws {
        let app = try Self.application()
        for (path, methods) in [("/auth/me", "GET"), ("/auth/sessions/42", "DELETE"), ("/sync", "POST"), ("/auth/token", "POST")] {
            for origin in [Self.listed, Self.webview] {
                let answer = app.respond(
                    "OPTIONS", path, headers: [("Origin", origin), ("Access-Control-Request-Method", methods)])
                #expect(answer.status == 204, "\(path)")
                #expect(answer.values(of: "Access-Control-Allow-Origin") == [origin])
                #expect(answer.values(of: "Access-Control-Allow-Methods") == [methods], "\(path)")
                #expect(answer.values(of: "Access-Control-Allow-Headers") == ["Authorization, Content-Type"])
                #expect(answer.values(of: "Access-Control-Max-Age") == ["600"])
                #expect(answer.values(of: "Vary") == ["Origin"])
                #expect(answer.values(of: "Access-Control-Allow-Credentials").isEmpty)
                #expect(answer.body.isEmpty)
            }
        }
    }

    @Test("A preflight from an origin not listed (or with none, or two) is refused: 403 JSON, no CORS header")
    func preflightRefused() throws {
        let app = try Self.application()
        for headers in [
            [("Origin", Self.unlisted)], [], [("Origin", "https://app.example.com.evil.example")], [("Origin", "http://app.example.com")],
            [("Origin", Self.listed), ("Origin", Self.listed)],
        ] {
            let answer = app.respond("OPTIONS", "/auth/refresh", headers: headers)
            #expect(answer.status == 403, "\(headers)")
            #expect(String(decoding: answer.body, as: UTF8.self).contains(#""error":"origin_mismatch""#))
            #expect(answer.values(of: "Access-Control-Allow-Origin").isEmpty)
        }
    }

    @Test("The open routes' answers, errors too, name a listed origin (exposing Retry-After); others get only Vary")
    func answers() throws {
        let app = try Self.application()
        let listed = app.respond("GET", "/auth/me", headers: [("Origin", Self.listed)])
        #expect(listed.status == 401)
        #expect(listed.values(of: "Access-Control-Allow-Origin") == [Self.listed])
        #expect(listed.values(of: "Access-Control-Expose-Headers") == ["Retry-After"])
        #expect(listed.values(of: "Vary") == ["Origin"])
        #expect(listed.values(of: "Access-Control-Allow-Credentials").isEmpty)
        let keys = app.respond("GET", "/auth/jwks.json", headers: [("Origin", Self.webview)])
        #expect(keys.status == 200 && keys.values(of: "Access-Control-Allow-Origin") == [Self.webview])
        let token = app.respond("POST", "/auth/token", contentType: "application/x-www-form-urlencoded", headers: [("Origin", Self.listed)])
        #expect(token.status == 400 && token.values(of: "Access-Control-Allow-Origin") == [Self.listed])
        for headers in [[("Origin", Self.unlisted)], []] {
            let other = app.respond("GET", "/auth/me", headers: headers)
            #expect(other.status == 401)
            #expect(other.values(of: "Access-Control-Allow-Origin").isEmpty && other.values(of: "Access-Control-Expose-Headers").isEmpty)
            #expect(other.values(of: "Vary") == ["Origin"])
        }
    }

    @Test("The cookie and sign-in routes stay closed to other origins: no CORS header, OPTIONS is 405")
    func closedRoutes() throws {
        let app = try Self.application()
        for (method, path) in [("POST", "/auth/web/apple"), ("POST", "/auth/apple"), ("GET", "/auth/web/start"), ("GET", "/health")] {
            let answer = app.respond(method, path, headers: [("Origin", Self.listed)])
            #expect(answer.values(of: "Access-Control-Allow-Origin").isEmpty, "\(method) \(path)")
            #expect(answer.values(of: "Vary").isEmpty, "\(method) \(path)")
            let preflight = app.respond("OPTIONS", path, headers: [("Origin", Self.listed)])
            #expect(preflight.status == 405 && preflight.values(of: "Access-Control-Allow-Origin").isEmpty, "\(path)")
        }
    }

    @Test("With no origin listed (the default), siwa answers as without CORS: OPTIONS is 405, no Vary")
    func noneListed() throws {
        let app = try BrowserSignInApplication()
        let preflight = app.respond("OPTIONS", "/auth/me", headers: [("Origin", Self.listed)])
        #expect(preflight.status == 405)
        let answer = app.respond("GET", "/auth/me", headers: [("Origin", Self.listed)])
        #expect(answer.status == 401 && answer.values(of: "Access-Control-Allow-Origin").isEmpty && answer.values(of: "Vary").isEmpty)
    }

    @Test("Every open route is one of the HTTP contract's, with its method")
    func openRoutesExist() {
        let routes = Application.routes().routes.map { "\($0.method) \($0.pattern)" }
        for route in CrossOrigin.routes { #expect(routes.contains("\(route.method) \(route.pattern)")) }
    }
}
