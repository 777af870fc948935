package import FastCGI
package import Identity
import StrictJSON
import WebForms

/// A native app's sign-in through the system browser with PKCE (RFC 8252, RFC 7636): the start in
/// the browser, and the token endpoint the app posts its code to.
package enum AppSignInRoutes {
    /// The routes: the start in the browser (errors are pages) and the token endpoint.
    package static let routes = [
        Route("GET", "/auth/app/start", answers: .page, start), Route("POST", "/auth/token", answers: .tokenEndpoint, token),
    ]

    /// `GET /auth/app/start?client_id&redirect_uri&code_challenge&code_challenge_method=S256&state`:
    /// 302 to Apple with the binding cookie; an unregistered client or redirect URI gets a page,
    /// anything else wrong a redirect to the app with `error`.
    package static func start(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        guard let query = request.queryFields else { throw HTTPError.badRequest("The query string is malformed") }
        func field(_ name: String) -> String? { query.last { $0.0 == name }?.1 }
        let started = try useCases.signIn.startAppSignIn(
            clientID: field("client_id"), redirectURI: field("redirect_uri"), codeChallenge: field("code_challenge"),
            challengeMethod: field("code_challenge_method"), state: field("state"))
        switch started {
        case .authorize(let start):
            return Response(
                status: 302,
                headers: [
                    ("Location", start.authorizeURL), ("Cache-Control", "no-store"),
                    Cookies.set(Cookies.binding, start.binding, maxAge: SignInUseCases.webSignInLifetime),
                ])
        case .refused(let message):
            return WebSignInRoutes.page(400, message)
        case .redirect(let location):
            return Response(status: 302, headers: [("Location", location), ("Cache-Control", "no-store")])
        }
    }

    /// An answer of the token endpoint as RFC 6749 §5.1 and §5.2 want it: never cached
    /// (`Cache-Control: no-store` and `Pragma: no-cache`), and an error's text in
    /// `error_description` as well as in `message`, which the other routes' errors carry.
    static func tokenEndpointAnswer(_ response: Response) -> Response {
        var answer = response
        answer.headers.removeAll { ["cache-control", "pragma"].contains($0.name.lowercased()) }
        answer.headers += [("Cache-Control", "no-store"), ("Pragma", "no-cache")]
        guard answer.status >= 400, let body = try? JSONObject(parsing: answer.body), let error = try? body.string("error"),
            let message = try? body.string("message")
        else { return answer }
        answer.body = Array(
            JSONText.object([("error", .string(error)), ("error_description", .string(message)), ("message", .string(message))]).utf8)
        return answer
    }

    /// `POST /auth/token` (`application/x-www-form-urlencoded`, RFC 6749 §4.1.3):
    /// `grant_type=authorization_code`, `code`, `code_verifier`, `redirect_uri`, `client_id`; the
    /// grant of a native sign-in.
    package static func token(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        try request.requireForm("The token request is application/x-www-form-urlencoded")
        guard let form = FormEncoding.fields(String(decoding: request.body, as: UTF8.self)) else {
            throw HTTPError.badRequest("The form is malformed")
        }
        func field(_ name: String) throws -> String? {
            let values = form.filter { $0.0 == name }
            guard values.count <= 1 else { throw HTTPError.badRequest("\(name) is repeated") }
            return values.first?.1
        }
        guard let grantType = try field("grant_type") else { throw HTTPError.badRequest("grant_type is required") }
        guard grantType == "authorization_code" else {
            throw HTTPError(400, "unsupported_grant_type", "Only grant_type=authorization_code is supported here")
        }
        let tokenRequest = SignInUseCases.AppTokenRequest(
            clientID: try field("client_id"), code: try field("code"), codeVerifier: try field("code_verifier"),
            redirectURI: try field("redirect_uri"))
        let grant = try useCases.signIn.exchangeAppCode(tokenRequest, remoteAddress: request.remoteAddress)
        return NativeSignInRoutes.tokenResponse(grant)
    }
}
