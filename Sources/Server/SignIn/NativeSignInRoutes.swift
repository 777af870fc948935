package import FastCGI
package import Identity
import JOSE
import StrictJSON

/// `POST /auth/apple` (native sign-in) and `POST /auth/refresh`.
package enum NativeSignInRoutes {
    /// The routes: the native sign-in and refresh, and the sign-in into the cookie session, which
    /// only this site's pages may ask for.
    package static let routes = [
        Route("POST", "/auth/apple", signIn), Route("POST", "/auth/refresh", refresh),
        Route("POST", "/auth/web/apple", access: .ownOrigin, signInWithCookie),
    ]

    /// The body of a sign-in, read from the strict parse of the body (`Request.jsonObject`); other
    /// members are ignored.
    struct SignInBody {
        struct FullName {
            var givenName: String?
            var familyName: String?
        }

        var identityToken: String
        var authorizationCode: String?
        var nonce: String?
        var user: String?
        var fullName: FullName?
        var device: String?
        /// A link token from the app's older backend: the Apple ID goes to that backend's user.
        var linkToken: String?
        /// The `redirect_uri` of a Services ID's authorization (Android, Flutter, Sign in with Apple JS).
        var redirectUri: String?

        init(_ body: JSONObject) throws {
            identityToken = try requiredString(body, "identityToken")
            authorizationCode = try optionalString(body, "authorizationCode")
            nonce = try optionalString(body, "nonce")
            user = try optionalString(body, "user")
            switch body.kind(of: "fullName") {
            case nil, .null?: fullName = nil
            case .object?:
                guard let name = try? body.object("fullName") else { throw HTTPError.badRequest("`fullName` has the wrong type") }
                fullName = FullName(
                    givenName: try optionalString(name, "givenName", in: "fullName"),
                    familyName: try optionalString(name, "familyName", in: "fullName"))
            default: throw HTTPError.badRequest("`fullName` has the wrong type")
            }
            device = try optionalString(body, "device")
            linkToken = try optionalString(body, "linkToken")
            redirectUri = try optionalString(body, "redirectUri")
        }
    }

    /// Signs in with Apple's identity token (and code), opening a session for the device.
    package static func signIn(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let body = try SignInBody(request.jsonObject(limits: context.bodyLimits))
        let grant = try useCases.signIn.signIn(
            try attempt(body), device: try limited(body.device, "device", maximum: 512), remoteAddress: request.remoteAddress,
            link: try link(request, body))
        return tokenResponse(grant)
    }

    /// `POST /auth/web/apple`: a page of this site signs in with Sign in with Apple JS's credential
    /// into the account pages' cookie session: 200 `{user, isNewUser}` with the session cookie. Like
    /// every cookie write it must come from this site (`Origin`: the route's access, `ownOrigin`).
    package static func signInWithCookie(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let body = try SignInBody(request.jsonObject(limits: context.bodyLimits))
        guard body.linkToken == nil else { throw HTTPError.badRequest("`linkToken` is for POST /auth/apple, not the cookie session") }
        let signedIn = try useCases.signIn.signInWithCookie(
            try attempt(body), device: BrowserLabel.label(userAgent: request.headers["user-agent"]), remoteAddress: request.remoteAddress)
        let answer = JSONText.object([("user", .raw(AccountRoutes.json(signedIn.profile))), ("isNewUser", .bool(signedIn.isNewUser))])
        return Response(
            status: 200,
            headers: [
                ("Cache-Control", "no-store"), Cookies.set(Cookies.session, signedIn.cookie, maxAge: useCases.sessions.sessionLifetime),
            ],
            body: Array(answer.utf8))
    }

    /// What a sign-in body says of Apple's credential.
    static func attempt(_ body: SignInBody) throws -> SignInAttempt {
        SignInAttempt(
            identityToken: try limited(body.identityToken, "identityToken", maximum: 16_384) ?? "",
            authorizationCode: try limited(body.authorizationCode, "authorizationCode", maximum: 1024),
            nonce: try limited(body.nonce, "nonce", maximum: 256), claimedUser: try limited(body.user, "user", maximum: 255),
            firstName: try limited(body.fullName?.givenName, "fullName.givenName", maximum: 1024),
            lastName: try limited(body.fullName?.familyName, "fullName.familyName", maximum: 1024),
            redirectURI: try limited(body.redirectUri, "redirectUri", maximum: 2048))
    }

    /// The account the Apple ID is to go to: the older backend's user of a link token, or else a
    /// guest's, when the request carries the guest's access token. A link token names its account
    /// itself, so a Bearer sent with it is not used.
    static func link(_ request: Request, _ body: SignInBody) throws -> SignInLink? {
        if let linkToken = try limited(body.linkToken, "linkToken", maximum: 64) { return .linkToken(linkToken) }
        return try Caller.bearerToken(request).map { .guestSession(accessToken: $0) }
    }

    /// Rotates a refresh token (the body's `refreshToken`) and issues a new access token.
    package static func refresh(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let refreshToken = try requiredString(request.jsonObject(limits: context.bodyLimits), "refreshToken")
        let grant = try useCases.sessions.refresh(refreshToken: refreshToken, remoteAddress: request.remoteAddress)
        return tokenResponse(grant)
    }

    /// `{accessToken, tokenType, expiresIn, refreshToken, sessionId}`, and after a sign-in `user` and `isNewUser`.
    static func tokenResponse(_ grant: Grant) -> Response {
        var members: [(String, JSONText.Value?)] = [
            ("accessToken", .string(grant.accessToken)), ("tokenType", .string("Bearer")),
            ("expiresIn", .integer(Int64(grant.expiresIn))), ("refreshToken", .string(grant.refreshToken)),
            ("sessionId", .string(String(grant.sessionID))),
        ]
        if let profile = grant.profile {
            members.append(("user", .raw(AccountRoutes.json(profile))))
            members.append(("isNewUser", .bool(grant.isNewUser)))
        }
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(JSONText.object(members).utf8))
    }
}
