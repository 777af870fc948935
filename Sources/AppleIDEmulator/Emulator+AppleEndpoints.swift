import FastCGI
import JOSE
import StrictJSON

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
