import FastCGI
import HTTPClient
import JOSE
import StrictJSON
import WebForms

/// `GET /auth/authorize` (the consent page) and `POST /auth/authorize` (the person's decision),
/// checked the way Apple's documentation describes (docs/APPLE-PROTOCOL.md §1).
extension Emulator {
    /// The parameters of an authorization request, checked.
    struct AuthorizeRequest {
        let clientID: String
        let redirectURI: String
        let responseType: String
        let responseMode: String
        let scopes: [String]
        let state: String?
        let nonce: String?

        var wantsIdentityToken: Bool { responseType.contains("id_token") }

        /// The request's parameters, to carry through the consent form.
        var parameters: [(String, String)] {
            [
                ("client_id", clientID), ("redirect_uri", redirectURI), ("response_type", responseType),
                ("response_mode", responseMode), ("scope", scopes.joined(separator: " ")),
            ]
                + (state.map { [("state", $0)] } ?? []) + (nonce.map { [("nonce", $0)] } ?? [])
        }
    }

    func authorizeRequest(_ fields: FormFields) throws -> AuthorizeRequest {
        guard let clientID = fields["client_id"], let client = configuration.client(clientID) else {
            throw AuthorizeError("invalid_client", "Invalid client id.")
        }
        guard let redirectURI = fields["redirect_uri"], client.redirectURIs.contains(redirectURI) else {
            throw AuthorizeError("invalid_request", "Invalid web redirect url.")
        }
        let responseType = (fields["response_type"] ?? "").split(separator: " ").sorted().joined(separator: " ")
        guard responseType == "code" || responseType == "code id_token" else {
            throw AuthorizeError("unsupported_response_type", "response_type must be code or code id_token.")
        }
        let scopes = (fields["scope"] ?? "").split(separator: " ").map(String.init)
        guard scopes.allSatisfy({ ["name", "email", "openid"].contains($0) }), Set(scopes).count == scopes.count else {
            throw AuthorizeError("invalid_scope", "scope may hold name and email.")
        }
        let responseMode = fields["response_mode"] ?? "query"
        // web_message: Sign in with Apple JS's popup, which answers its opener (SignInWithAppleJS).
        guard ["query", "fragment", "form_post", "web_message"].contains(responseMode) else {
            throw AuthorizeError("invalid_request", "response_mode must be query, fragment, form_post or web_message.")
        }
        if !scopes.filter({ $0 != "openid" }).isEmpty, !["form_post", "web_message"].contains(responseMode) {
            throw AuthorizeError("invalid_request", "response_mode must be form_post or web_message when scopes are requested.")
        }
        if responseType.contains("id_token"), responseMode == "query" {
            throw AuthorizeError("invalid_request", "response_mode must be fragment or form_post when id_token is requested.")
        }
        return AuthorizeRequest(
            clientID: clientID, redirectURI: redirectURI, responseType: responseType, responseMode: responseMode,
            scopes: scopes.filter { $0 != "openid" }, state: fields["state"], nonce: fields["nonce"])
    }

    /// `GET /auth/authorize`: the consent page.
    func authorize(_ request: Request) throws -> Response {
        let fields: FormFields
        do { fields = try FormFields(request.query) } catch { throw AuthorizeError("invalid_request", "Malformed query.") }
        let authorizeRequest = try authorizeRequest(fields)
        let users = store.read { Array($0.users.values) }.sorted { $0.email < $1.email }
        return ConsentPage.render(authorizeRequest, users: users)
    }

    /// `POST /auth/authorize`: Continue or Cancel on the consent page, answered as Apple answers
    /// the client (a form post, or a redirect with the query or fragment).
    func decide(_ request: Request) throws -> Response {
        let fields: FormFields
        do { fields = try FormFields(body: request) } catch { throw AuthorizeError("invalid_request", "Malformed form.") }
        let authorizeRequest = try authorizeRequest(fields)
        guard fields["action"] == "continue" else {
            return deliver(
                authorizeRequest, [("error", "user_cancelled_authorize")] + (authorizeRequest.state.map { [("state", $0)] } ?? []))
        }
        let now = clock()
        var userID = fields["user_id"] ?? "new"
        if userID != "new", store.read({ $0.users[userID] }) == nil {
            throw AuthorizeError("invalid_request", "Unknown test user.")
        }
        if userID == "new" {
            userID = try createUser(
                email: fields["email"], firstName: fields["first_name"] ?? "", lastName: fields["last_name"] ?? "",
                emailVerified: true
            ).id
        }
        let grant = try authorize(
            userID: userID, clientID: authorizeRequest.clientID, scopes: authorizeRequest.scopes,
            hideEmail: fields["email_choice"] == "hide", redirectURI: authorizeRequest.redirectURI, nonce: authorizeRequest.nonce,
            now: now)
        var response: [(String, String)] = [("code", grant.code)]
        if authorizeRequest.wantsIdentityToken {
            let claims = try identityClaims(
                user: grant.user, clientID: authorizeRequest.clientID, now: now, lifetime: Self.webIdentityTokenLifetime,
                nonce: authorizeRequest.nonce, authTime: grant.authTime, codeHash: AppleFormats.halfHash(grant.code))
            response.append(("id_token", try currentKey.sign(claims: claims.json)))
        }
        if let state = authorizeRequest.state { response.append(("state", state)) }
        if authorizeRequest.responseMode == "web_message" {
            // SignInResponseI: the authorization, and the user on the first authorization only.
            var members: [(String, JSONText.Value?)] = [("authorization", .raw(JSONText.object(response.map { ($0.0, .string($0.1)) })))]
            if let userJSON = grant.userJSON { members.append(("user", .raw(userJSON))) }
            return SignInWithAppleJS.webMessage(to: authorizeRequest.redirectURI, JSONText.object(members))
        }
        if let userJSON = grant.userJSON, authorizeRequest.responseMode == "form_post" { response.append(("user", userJSON)) }
        return deliver(authorizeRequest, response)
    }

    /// Sends `fields` back to the client the way `response_mode` says.
    private func deliver(_ request: AuthorizeRequest, _ fields: [(String, String)]) -> Response {
        let encoded = fields.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }.joined(separator: "&")
        switch request.responseMode {
        case "web_message":
            // SignInErrorI.
            return SignInWithAppleJS.webMessage(
                to: request.redirectURI, JSONText.object([("error", .string(fields.first { $0.0 == "error" }?.1 ?? "unknown"))]))
        case "form_post":
            return ConsentPage.formPost(to: request.redirectURI, fields)
        case "fragment":
            return Response(status: 302, contentType: "text/plain", headers: [("Location", request.redirectURI + "#" + encoded)])
        default:
            let separator = request.redirectURI.contains("?") ? "&" : "?"
            return Response(status: 302, contentType: "text/plain", headers: [("Location", request.redirectURI + separator + encoded)])
        }
    }
}

/// An authorization request Apple would refuse: an error page, never a redirect (the redirect
/// URI cannot be trusted yet).
struct AuthorizeError: Error {
    let code: String
    let message: String

    init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    var response: Response { ConsentPage.errorPage(code: code, message: message) }
}
