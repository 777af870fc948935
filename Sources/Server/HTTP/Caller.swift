package import FastCGI
package import Identity

/// Who is calling a protected route: a Bearer access token (native apps) or the web session
/// cookie. Either way the use case checks that the session is still active. Writes made with the
/// cookie must come from our own origin (`Origin` header), since a browser sends the cookie along
/// with requests other sites make it send.
package enum Caller {
    /// The caller of `request`, with an active session.
    /// - Parameter method: the method the `Origin` rule applies to: the request's own unless it
    ///   authorizes another request (nginx's `auth_request`).
    package static func authenticate(_ request: Request, _ useCases: UseCases, method: String? = nil) throws -> Principal {
        if let token = try bearerToken(request) { return try useCases.sessions.authenticate(accessToken: token) }
        return try authenticateCookie(request, useCases, method: method ?? request.method)
    }

    /// The caller for a route whose own statements check the session (sync): the session of an
    /// access token is returned as `uncheckedSession` and must be checked by the route before it
    /// answers or writes. A cookie's session is checked here (finding it is how it is read).
    package static func authenticateDeferringSessionCheck(
        _ request: Request, _ useCases: UseCases
    ) throws -> (principal: Principal, uncheckedSession: UInt64?) {
        if let token = try bearerToken(request) {
            let principal = try useCases.sessions.authenticateDeferringSessionCheck(accessToken: token)
            return (principal, principal.sessionID)
        }
        return (try authenticateCookie(request, useCases, method: request.method), nil)
    }

    /// The access token of an `Authorization: Bearer` header; nil without the header.
    static func bearerToken(_ request: Request) throws -> String? {
        guard let authorization = request.headers["authorization"] else { return nil }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            throw unauthorized("Use `Authorization: Bearer <access token>`")
        }
        return String(authorization.dropFirst(7))
    }

    private static func authenticateCookie(_ request: Request, _ useCases: UseCases, method: String) throws -> Principal {
        guard let cookie = Cookies.value(Cookies.session, in: request) else {
            throw unauthorized("An access token (Authorization: Bearer) or a session cookie is required")
        }
        let principal = try useCases.sessions.authenticate(cookie: cookie)
        if !["GET", "HEAD"].contains(method) {
            try checkOrigin(request, publicURL: useCases.sessions.publicURL)
        }
        return principal
    }

    /// Refuses a cookie-authenticated write from another origin (or with no `Origin` at all).
    static func checkOrigin(_ request: Request, publicURL: String?) throws {
        guard let publicURL, request.headers.count(of: "origin") == 1, request.headers["origin"] == publicURL else {
            throw HTTPError(403, "origin_mismatch", "Requests authenticated by cookie must come from \(publicURL ?? "this site")")
        }
    }

    static func unauthorized(_ message: String) -> HTTPError { HTTPError(401, "invalid_token", message) }
}

extension Route.Access {
    /// Refuses, before the handler runs, a request this access rules out by its headers alone: one
    /// without our `Origin` (`ownOrigin`), one a browser made (`linkSecret`). The other rules need
    /// the session, which the handler reads.
    func admit(_ request: Request, _ useCases: UseCases) throws {
        switch self {
        case .ownOrigin:
            try Caller.checkOrigin(request, publicURL: useCases.sessions.publicURL)
        case .linkSecret where request.headers["origin"] != nil || request.headers["cookie"] != nil:
            throw HTTPError(403, "not_for_browsers", "Link tokens are minted by the app's backend, never from a browser")
        case .anyone, .session, .authRequest, .linkSecret:
            break
        }
    }
}
