package import FastCGI
import Foundation
package import Identity
import JOSE
import StrictJSON
import WebForms

/// The browser's half of the web flow (see `SignInUseCases.startWebSignIn` for the steps): redirects,
/// cookies and the small pages a browser is shown.
package enum WebSignInRoutes {
    /// The routes: a browser lands on each, so their errors are pages.
    package static let routes = [
        Route("GET", "/auth/web/start", answers: .page, start), Route("POST", "/auth/callback", answers: .page, callback),
        Route("GET", "/auth/web/complete", answers: .page, complete),
    ]

    /// `GET /auth/web/start?return_to=/path`: 302 to Apple's authorize page, with the binding cookie.
    package static func start(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        guard let query = request.queryFields else { throw HTTPError.badRequest("The query string is malformed") }
        let returnTo = try sameSitePath(query.last { $0.0 == "return_to" }?.1 ?? "/")
        let started = try useCases.signIn.startWebSignIn(returnTo: returnTo)
        return Response(
            status: 302,
            headers: [
                ("Location", started.authorizeURL), ("Cache-Control", "no-store"),
                Cookies.set(Cookies.binding, started.binding, maxAge: SignInUseCases.webSignInLifetime),
            ])
    }

    /// `POST /auth/callback`: Apple's form post; 303 to our own site with a one-time handle. A
    /// body that is not a form is refused (415), and so is a form that repeats one of Apple's fields.
    package static func callback(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        try request.requireForm("Apple's answer is a form post (application/x-www-form-urlencoded)")
        guard let fields = FormEncoding.fields(String(decoding: request.body, as: UTF8.self)),
            let form = FormEncoding.distinct(fields, among: ["state", "error", "id_token", "code", "user"])
        else {
            return page(400, "The sign-in answer could not be read. Please start again.")
        }
        let callback = SignInUseCases.WebCallback(
            state: form["state"], error: form["error"], identityToken: form["id_token"], code: form["code"], user: form["user"])
        guard let handle = try useCases.signIn.completeWebCallback(callback), let publicURL = useCases.sessions.publicURL else {
            return page(400, "This sign-in is not valid or has expired. Please start again.")
        }
        return Response(
            status: 303, headers: [("Location", publicURL + "/auth/web/complete?handle=" + handle), ("Cache-Control", "no-store")])
    }

    /// `GET /auth/web/complete?handle=…`: checks the binding cookie, sets the session cookie, and
    /// sends the browser to `return_to`.
    package static func complete(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        guard let handle = request.queryFields?.last(where: { $0.0 == "handle" })?.1 else {
            return page(400, "This sign-in link is not valid. Please start again.")
        }
        let redemption = try useCases.signIn.redeemWebSignIn(
            handle: handle, binding: Cookies.value(Cookies.binding, in: request),
            device: BrowserLabel.label(userAgent: request.headers["user-agent"]), remoteAddress: request.remoteAddress)
        switch redemption {
        case .unknown:
            return page(400, "This sign-in link has expired or was already used. Please start again.")
        case .otherBrowser:
            return page(403, "This sign-in was started in another browser. Please start again here.", headers: [Cookies.clearBinding])
        case .failed(let returnTo, let code):
            let separator = returnTo.contains("?") ? "&" : "?"
            return Response(
                status: 303,
                headers: [
                    ("Location", location(of: returnTo) + separator + "sign_in_error=" + FormEncoding.encode(code)), Cookies.clearBinding,
                ])
        case .app(let location, _):
            return Response(
                status: 303,
                headers: [("Location", location), ("Cache-Control", "no-store"), Cookies.clearBinding])
        case .signedIn(let returnTo, let cookie):
            return Response(
                status: 303,
                headers: [
                    ("Location", location(of: returnTo)), ("Cache-Control", "no-store"), Cookies.clearBinding,
                    Cookies.set(Cookies.session, cookie, maxAge: useCases.sessions.sessionLifetime),
                ])
        }
    }

    /// `return_to` as a same-origin path: `/` followed by anything but `/` or `\` (so never
    /// `//host` or `/\host`), at most 512 characters (code points, as the document's `maxLength`
    /// counts), and none of the characters that hide or disguise what a path is (`isHidden`).
    /// Compared byte by byte, not by `Character`: `/` followed by a combining mark or an emoji
    /// modifier is one `Character`, which `hasPrefix("/")` would not match. The path is sent back
    /// percent-encoded (`location(of:)`), so at most 6,144 bytes of `Location`.
    package static func sameSitePath(_ value: String) throws -> String {
        let bytes = Array(value.utf8.prefix(2))
        let valid =
            bytes.first == UInt8(ascii: "/") && bytes.dropFirst().first != UInt8(ascii: "/")
            && bytes.dropFirst().first != UInt8(ascii: "\\") && value.unicodeScalars.count <= 512
            && !value.unicodeScalars.contains(where: isHidden)
        guard valid else { throw HTTPError.badRequest("`return_to` must be a path on this site, such as /account") }
        return value
    }

    /// Whether `scalar` has no place in a path a person is sent to: control characters, white
    /// space (ECMAScript's `\s`, as the document's pattern says), format characters (Unicode's
    /// category Cf: zero-width spaces and joiners, bidirectional overrides, U+180E), the other
    /// default-ignorable code points (U+034F, variation selectors, Hangul fillers), which render as
    /// nothing, and the characters that look like `/` or `\` or become one under compatibility
    /// normalisation (fullwidth and small solidi, the fraction and division slashes, `℀`).
    static func isHidden(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        return properties.generalCategory == .control || properties.generalCategory == .format
            || properties.isDefaultIgnorableCodePoint || isPatternSpace(scalar) || slashLookalikes.contains(scalar.value)
    }

    /// Characters that a reader or a normaliser takes for `/` or `\`.
    static let slashLookalikes: Set<UInt32> = [
        0x2044, 0x2215, 0x2216, 0x2571, 0x2572, 0x27CB, 0x27CD, 0x29F5, 0x29F8, 0x29F9, 0xFE68, 0xFF0F, 0xFF3C,
        0x2100, 0x2101, 0x2105, 0x2106,
    ]

    /// Whether `scalar` is white space to the document's `return_to` pattern: ECMAScript's `\s`
    /// (JSON Schema patterns are ECMAScript's), which is Unicode's space separators, the line and
    /// paragraph separators, tab, line feed, vertical tab, form feed, carriage return and U+FEFF.
    static func isPatternSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: true
        default: false
        }
    }

    /// A checked `return_to` as a `Location` (RFC 9110 §10.2.2 takes a URI reference, RFC 3986):
    /// every byte that is not a URI character percent-encoded, so a path with letters beyond
    /// ASCII goes out as `/caf%C3%A9`, never as raw UTF-8; `%` followed by two hex digits is an
    /// escape already and stays.
    package static func location(of path: String) -> String {
        let bytes = Array(path.utf8)
        var out = ""
        out.reserveCapacity(bytes.count)
        for (index, byte) in bytes.enumerated() {
            let isEscape =
                byte == UInt8(ascii: "%") && index + 2 < bytes.count && isHexDigit(bytes[index + 1]) && isHexDigit(bytes[index + 2])
            if isEscape || (byte < 0x80 && uriCharacters.contains(Unicode.Scalar(byte))) {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool { byte < 0x80 && Character(Unicode.Scalar(byte)).isHexDigit }

    /// RFC 3986's unreserved and reserved characters but `[` and `]`, which belong in a host only.
    private static let uriCharacters = Set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#@!$&'()*+,;=".unicodeScalars)

    /// An error answer (JSON) as the page a browser is shown, with the same status and its
    /// `Retry-After` or `Allow`.
    static func page(showing response: Response) -> Response {
        let message = (try? JSONObject(parsing: String(decoding: response.body, as: UTF8.self)).string("message")) ?? nil
        return page(
            response.status, message ?? "Something went wrong. Please try again.",
            headers: response.headers.filter { ["Retry-After", "Allow"].contains($0.name) }.map { ($0.name, $0.value) })
    }

    /// A small HTML page for the browser, styled like the account page.
    static func page(_ status: Int, _ message: String, headers: [(String, String)] = []) -> Response {
        let escaped = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign-in did not complete</title>
            <meta name="viewport" content="width=device-width, initial-scale=1"><link rel="stylesheet" href="/app.css"></head>
            <body><main><h1>Sign-in did not complete</h1><p id="message">\(escaped)</p>
            <p><a class="button" href="/">Back to the account page</a></p></main></body></html>
            """
        return Response(
            status: status, contentType: "text/html; charset=utf-8", headers: headers + [("Cache-Control", "no-store")],
            body: Array(html.utf8))
    }
}
