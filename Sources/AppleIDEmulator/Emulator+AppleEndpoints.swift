import FastCGI
import Foundation
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

/// Consent and authorization codes: what the consent page and the admin API's native sign-in
/// share.
extension Emulator {
    /// The outcome of one authorization: a code, and the `user` JSON when it was the user's first
    /// authorization of the client.
    struct Grant {
        let code: String
        let user: TestUser
        let authTime: Int64
        /// `{"name":{"firstName":..,"lastName":..},"email":..}`, only on the first authorization.
        let userJSON: String?
    }

    /// Records the user's consent to `clientID` (kept if it exists: "Hide My Email" and the scopes
    /// are chosen once), gives the user a relay address for the client if they have none, and
    /// issues a code.
    func authorize(
        userID: String, clientID: String, scopes: [String], hideEmail: Bool, redirectURI: String?, nonce: String?, now: Int64
    ) throws -> Grant {
        let code = try AppleFormats.opaqueToken(kind: "c")
        let relay = try AppleFormats.relayAddress()
        return try store.change { state in
            guard let user = state.users[userID] else { throw AdminError(404, "not_found", "no user \(userID)") }
            let pair = Pair.key(userID, clientID)
            if state.relayAddresses[pair] == nil { state.relayAddresses[pair] = relay }
            var userJSON: String?
            if state.authorizations[pair] == nil {
                state.authorizations[pair] = Authorization(
                    userID: userID, clientID: clientID, hideEmail: hideEmail, scopes: scopes, grantedAt: now)
                userJSON = Self.userJSON(user: user, scopes: scopes, email: hideEmail ? state.relayAddresses[pair]! : user.email)
            }
            state.pruneCodes(now: now)
            state.codes[code] = IssuedCode(
                userID: userID, clientID: clientID, redirectURI: redirectURI, nonce: nonce, authTime: now,
                expiresAt: now + Self.codeLifetime, used: false)
            return Grant(code: code, user: user, authTime: now, userJSON: userJSON)
        }
    }

    /// The `user` member of Apple's form post: the name and email asked for by the scopes.
    static func userJSON(user: TestUser, scopes: [String], email: String) -> String? {
        var members: [(String, JSONText.Value?)] = []
        if scopes.contains("name") {
            members.append(("name", .raw(JSONText.object([("firstName", .string(user.firstName)), ("lastName", .string(user.lastName))]))))
        }
        if scopes.contains("email") { members.append(("email", .string(email))) }
        return members.isEmpty ? nil : JSONText.object(members)
    }

    /// Creates a test user.
    func createUser(email: String?, firstName: String, lastName: String, emailVerified: Bool) throws -> TestUser {
        let id = try AppleFormats.userID()
        let address = email ?? "\(id)@example.com"
        let user = TestUser(
            id: id, sub: AppleFormats.sub(teamID: configuration.teamID, userID: id), email: address, firstName: firstName,
            lastName: lastName, emailVerified: emailVerified, relayForwarding: true)
        try store.change { $0.users[id] = user }
        return user
    }
}

/// `POST /auth/token` and `POST /auth/revoke` (docs/APPLE-PROTOCOL.md §2, §6).
extension Emulator {
    /// Checks `client_id` and `client_secret`: both present, the client registered, the secret
    /// acceptable. Returns the client id.
    /// The client secret must be signed by the team that owns the client now.
    func authenticatedClient(_ form: FormFields, now: Int64) throws -> String {
        let clientID = try form.required("client_id")
        let secret = try form.required("client_secret")
        guard configuration.client(clientID) != nil else { throw AppleError(.invalidClient) }
        let check = store.read { secrets[team(of: clientID, in: $0)] }
        guard check?.problem(with: secret, clientID: clientID, now: now) == nil else { throw AppleError(.invalidClient) }
        return clientID
    }

    /// `POST /auth/token`: the `authorization_code` and `refresh_token` grants, and
    /// `client_credentials` with scope `user.migration` (team transfer; `invalid_scope` otherwise).
    func token(_ request: Request) throws -> Response {
        let form = try FormFields(body: request)
        let now = clock()
        let grant = try form.required("grant_type")
        let clientID = try authenticatedClient(form, now: now)
        if grant == "client_credentials" {
            // Apple's only use of this grant is team transfer (scope user.migration).
            guard form["scope"] == "user.migration" else { throw AppleError(.invalidScope) }
            return try migrationAccessToken(clientID: clientID, now: now)
        }
        guard grant == "authorization_code" || grant == "refresh_token" else { throw AppleError(.unsupportedGrantType) }
        if grant == "authorization_code" {
            return try exchange(code: form.required("code"), redirectURI: form["redirect_uri"], clientID: clientID, now: now)
        }
        return try refresh(token: form.required("refresh_token"), clientID: clientID, now: now)
    }

    private func exchange(code: String, redirectURI: String?, clientID: String, now: Int64) throws -> Response {
        let accessToken = try AppleFormats.opaqueToken(kind: "a")
        let refreshToken = try AppleFormats.opaqueToken(kind: "r")
        // Every check comes before the first change (dropping expired codes aside, which any call may do).
        let (issued, user, key) = try store.change { state -> (IssuedCode, TestUser, SigningKey) in
            state.pruneCodes(now: now)
            guard var issued = state.codes[code], issued.clientID == clientID else {
                throw AppleError(.invalidGrant, "The code has expired or has been revoked.")
            }
            guard !issued.used else { throw AppleError(.invalidGrant, "The code has already been used.") }
            guard issued.expiresAt > now else { throw AppleError(.invalidGrant, "The code has expired or has been revoked.") }
            // redirect_uri exactly when the authorize request had one, and the same one.
            guard issued.redirectURI == redirectURI else { throw AppleError(.invalidGrant) }
            guard let user = state.users[issued.userID], state.authorizations[Pair.key(issued.userID, clientID)] != nil else {
                throw AppleError(.invalidGrant, "The code has expired or has been revoked.")
            }
            issued.used = true
            state.codes[code] = issued
            state.accessTokens[accessToken] = IssuedToken(
                userID: user.id, clientID: clientID, authTime: issued.authTime, expiresAt: now + Self.accessTokenLifetime)
            state.refreshTokens[refreshToken] = IssuedToken(userID: user.id, clientID: clientID, authTime: issued.authTime, expiresAt: nil)
            return (issued, user, state.signingKeys[0])
        }
        let idToken = try key.sign(
            claims: identityClaims(
                user: user, clientID: clientID, now: now, lifetime: Self.webIdentityTokenLifetime, nonce: issued.nonce,
                authTime: issued.authTime, accessTokenHash: AppleFormats.halfHash(accessToken)
            ).json)
        return Response.apple(
            status: 200,
            body: JSONText.object([
                ("access_token", .string(accessToken)), ("token_type", .string("Bearer")),
                ("expires_in", .integer(Self.accessTokenLifetime)), ("refresh_token", .string(refreshToken)),
                ("id_token", .string(idToken)),
            ]))
    }

    private func refresh(token: String, clientID: String, now: Int64) throws -> Response {
        let accessToken = try AppleFormats.opaqueToken(kind: "a")
        let (issued, user, key) = try store.change { state -> (IssuedToken, TestUser, SigningKey) in
            guard let issued = state.refreshTokens[token], issued.clientID == clientID,
                let user = state.users[issued.userID]
            else { throw AppleError(.invalidGrant) }
            state.accessTokens[accessToken] = IssuedToken(
                userID: user.id, clientID: clientID, authTime: issued.authTime, expiresAt: now + Self.accessTokenLifetime)
            return (issued, user, state.signingKeys[0])
        }
        let idToken = try key.sign(
            claims: identityClaims(
                user: user, clientID: clientID, now: now, lifetime: Self.webIdentityTokenLifetime, nonce: nil,
                authTime: issued.authTime, accessTokenHash: AppleFormats.halfHash(accessToken)
            ).json)
        // Apple answers a refresh without a new refresh token.
        return Response.apple(
            status: 200,
            body: JSONText.object([
                ("access_token", .string(accessToken)), ("token_type", .string("Bearer")),
                ("expires_in", .integer(Self.accessTokenLifetime)), ("id_token", .string(idToken)),
            ]))
    }

    /// `POST /auth/revoke`: ends the user's authorization of the client the token belongs to.
    /// 200 with an empty body also when the token was already invalid; a token of another
    /// client is refused, because revocation must use the client id that minted the token.
    func revoke(_ request: Request) throws -> Response {
        let form = try FormFields(body: request)
        let now = clock()
        let clientID = try authenticatedClient(form, now: now)
        let token = try form.required("token")
        if let hint = form["token_type_hint"], hint != "refresh_token", hint != "access_token" {
            throw AppleError(.invalidRequest)
        }
        try store.update { state in
            guard let issued = state.refreshTokens[token] ?? state.accessTokens[token] else { return }
            guard issued.clientID == clientID else { throw AppleError(.invalidGrant) }
            state.revokeAuthorization(user: issued.userID, client: clientID)
        }
        return Response(status: 200, contentType: "text/plain", headers: [("Cache-Control", "no-store")])
    }

    /// The identity-token claims of `user` for `clientID`, with the email the user chose to share.
    func identityClaims(
        user: TestUser, clientID: String, now: Int64, lifetime: Int64, nonce: String?, authTime: Int64,
        codeHash: String? = nil, accessTokenHash: String? = nil, realUserStatus: Int? = nil, transferSub: String? = nil
    ) throws -> IdentityClaims {
        let (authorization, relay, owner, currentTransferSub) = store.read { state -> (Authorization?, String?, String, String?) in
            let owner = self.team(of: clientID, in: state)
            return (
                state.authorizations[Pair.key(user.id, clientID)],
                self.relayAddress(of: user.id, clientID: clientID, team: owner, in: state),
                owner, self.transferSub(of: user.id, clientID: clientID, now: now, in: state)
            )
        }
        var email: String?
        var isPrivate = false
        if let authorization, authorization.scopes.contains("email") {
            if authorization.hideEmail, let relay {
                email = relay
                isPrivate = true
            } else {
                email = user.email
            }
        }
        return IdentityClaims(
            audience: clientID, subject: sub(of: user, team: owner), issuedAt: now, lifetime: lifetime, nonce: nonce, codeHash: codeHash,
            accessTokenHash: accessTokenHash, email: email, emailVerified: isPrivate || user.emailVerified, isPrivateEmail: isPrivate,
            authTime: authTime, realUserStatus: realUserStatus, transferSub: transferSub ?? currentTransferSub)
    }
}

/// Team transfer, as Apple documents it ("Bringing new apps and users into your team"): a client
/// moves from one developer team to another (`POST /admin/transfers`); every user's `sub` is per
/// team, so it changes. Before the move, the sending team mints a `transfer_sub` per user with
/// `POST /auth/usermigrationinfo` (`sub`, `target`); after it, the receiving team exchanges each
/// `transfer_sub` for the new `sub` there, and identity tokens carry `transfer_sub` for 60 days.
/// Both calls need an access token of the `client_credentials` grant (scope `user.migration`). The
/// admin calls that move clients and age the transfers are in `Emulator+AdminAPI.swift`.
extension Emulator {
    /// How long after a transfer tokens carry `transfer_sub` and the exchange answers.
    static let transferWindow: Int64 = 60 * 86_400
    /// The lifetime of a `client_credentials` access token.
    static let migrationTokenLifetime: Int64 = 3600

    /// The team that owns `clientID` now.
    func team(of clientID: String, in state: borrowing EmulatorState) -> String {
        state.clientTeams[clientID] ?? configuration.teamID
    }

    /// `user`'s `sub` for `team` (stable per user and team).
    func sub(of user: TestUser, team: String) -> String {
        team == configuration.teamID ? user.sub : AppleFormats.sub(teamID: team, userID: user.id)
    }

    /// The relay address of `user` for `clientID` under `team`: a new one after a transfer.
    func relayAddress(of userID: String, clientID: String, team: String, in state: borrowing EmulatorState) -> String? {
        guard let relay = state.relayAddresses[Pair.key(userID, clientID)] else { return nil }
        return team == configuration.teamID ? relay : AppleFormats.relayAddress(derivedFrom: relay, team: team)
    }

    /// The `transfer_sub` an identity token of `userID` for `clientID` carries at `now`: within
    /// 60 days of the client's latest transfer, for a user who had authorized it before.
    func transferSub(of userID: String, clientID: String, now: Int64, in state: borrowing EmulatorState) -> String? {
        guard let transfer = state.transfers.last(where: { $0.clientID == clientID }), now - transfer.at < Self.transferWindow,
            let authorization = state.authorizations[Pair.key(userID, clientID)], authorization.grantedAt <= transfer.at
        else { return nil }
        return AppleFormats.transferSub(userID: userID, from: transfer.fromTeam, to: transfer.toTeam)
    }

    /// The `client_credentials` grant: an access token for `usermigrationinfo`.
    func migrationAccessToken(clientID: String, now: Int64) throws -> Response {
        let token = try AppleFormats.opaqueToken(kind: "a")
        try store.update { state in
            state.migrationTokens = state.migrationTokens.filter { $0.value.expiresAt > now }
            state.migrationTokens[token] = MigrationToken(
                clientID: clientID, teamID: self.team(of: clientID, in: state), expiresAt: now + Self.migrationTokenLifetime)
        }
        return Response.apple(
            status: 200,
            body: JSONText.object([
                ("access_token", .string(token)), ("token_type", .string("Bearer")), ("expires_in", .integer(Self.migrationTokenLifetime)),
            ]))
    }

    /// `POST /auth/usermigrationinfo`: with `sub` and `target`, the sending team mints the user's
    /// `transfer_sub`; with `transfer_sub`, the receiving team gets the user's new `sub` and email.
    func userMigrationInfo(_ request: Request) throws -> Response {
        let form = try FormFields(body: request)
        let now = clock()
        let clientID = try authenticatedClient(form, now: now)
        let bearer = request.bearerToken ?? ""
        let body = try store.read { state -> String in
            let team = self.team(of: clientID, in: state)
            guard let token = state.migrationTokens[bearer], token.clientID == clientID, token.teamID == team, token.expiresAt > now
            else { throw AppleError(.invalidClient, "The access token is missing, expired, or not this client's.") }
            if let sub = form["sub"] {
                let target = try form.required("target")
                guard target != team, configuration.teams.contains(where: { $0.teamID == target }) else {
                    throw AppleError(.invalidRequest, "Unknown target team.")
                }
                guard let user = state.users.values.first(where: { self.sub(of: $0, team: team) == sub }),
                    !state.migrationFailures.contains(user.id)
                else { throw AppleError(.invalidRequest) }
                return JSONText.object([("transfer_sub", .string(AppleFormats.transferSub(userID: user.id, from: team, to: target)))])
            }
            let presented = try form.required("transfer_sub")
            for transfer in state.transfers.reversed() where transfer.toTeam == team {
                guard
                    let user = state.users.values.first(where: {
                        AppleFormats.transferSub(userID: $0.id, from: transfer.fromTeam, to: team) == presented
                    })
                else { continue }
                guard now - transfer.at < Self.transferWindow else { throw AppleError(.invalidGrant, "The transfer period has ended.") }
                guard !state.migrationFailures.contains(user.id) else { throw AppleError(.invalidRequest) }
                let hidden = state.authorizations[Pair.key(user.id, clientID)]?.hideEmail ?? false
                let relay = hidden ? relayAddress(of: user.id, clientID: clientID, team: team, in: state) : nil
                return JSONText.object([
                    ("sub", .string(self.sub(of: user, team: team))), ("email", .string(relay ?? user.email)),
                    ("is_private_email", .bool(relay != nil)),
                ])
            }
            throw AppleError(.invalidRequest)
        }
        return Response.apple(status: 200, body: body)
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
