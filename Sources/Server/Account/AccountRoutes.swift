import AccountData
package import FastCGI
package import Identity
import JOSE
import StrictJSON

/// The signed-in user's own routes: profile, sessions, sign-out, account deletion, and our JWKS.
/// Every one but the JWKS goes through `Caller.authenticate`.
package enum AccountRoutes {
    /// The routes: each for a session but the JWKS, and the check nginx's `auth_request` sends.
    package static let routes = [
        Route("POST", "/auth/logout", access: .session, logout), Route("GET", "/auth/me", access: .session, me),
        Route("GET", "/auth/check", access: .authRequest, check), Route("GET", "/auth/sessions", access: .session, sessions),
        Route("DELETE", "/auth/sessions/{id}", access: .session, revokeSession),
        Route("DELETE", "/auth/account", access: .session, deleteAccount),
        Route("GET", "/auth/account/export", access: .session, export), Route("GET", "/auth/jwks.json", jwks),
    ]

    /// `GET /auth/me`: the profile with the emails and their relay and forwarding flags.
    package static func me(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let principal = try Caller.authenticate(request, useCases)
        let profile = try useCases.account.profile(of: principal)
        let body = JSONText.object([("user", .raw(json(profile))), ("sessionId", .string(String(principal.sessionID)))])
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(body.utf8))
    }

    /// `GET /auth/sessions`: the user's active sessions, the caller's marked `current`.
    package static func sessions(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let principal = try Caller.authenticate(request, useCases)
        let sessions = try useCases.sessions.sessions(of: principal).map { session in
            JSONText.object([
                ("id", .string(String(session.id))), ("device", session.device.map { .string($0) }),
                ("kind", .string(session.isWeb ? "web" : "native")), ("current", .bool(session.id == principal.sessionID)),
                ("createdAt", .integer(session.createdAt)), ("lastUsedAt", .integer(session.lastUsedAt)),
                ("expiresAt", .integer(session.expiresAt)),
            ])
        }
        let body = #"{"sessions":["# + sessions.joined(separator: ",") + "]}"
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(body.utf8))
    }

    /// `GET /auth/check`: 204 with the caller's user and session ids in `X-Siwa-User-Id` and
    /// `X-Siwa-Session-Id` when the access token or cookie belongs to an active session, else 401.
    /// nginx's `auth_request` sends it for a protected location (nginx/siwa-protect.conf); its
    /// subrequest is a GET, so the protected request's method comes as `?method=`, for the `Origin`
    /// rule of cookie-authenticated writes.
    package static func check(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let method = request.queryFields?.last { $0.0 == "method" }?.1
        if let method, !(1...16).contains(method.utf8.count) || !method.utf8.allSatisfy({ (65...90).contains($0) }) {
            throw HTTPError.badRequest("`method` must be an HTTP method such as GET or POST")
        }
        let principal = try Caller.authenticate(request, useCases, method: method)
        return Response(
            status: 204,
            headers: [
                ("X-Siwa-User-Id", String(principal.userID)), ("X-Siwa-Session-Id", String(principal.sessionID)),
                ("Cache-Control", "no-store"),
            ])
    }

    /// `DELETE /auth/sessions/{id}`: ends one of the user's sessions (204), 404 for any other id.
    package static func revokeSession(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let principal = try Caller.authenticate(request, useCases)
        guard let id = context.parameters["id"].flatMap(UInt64.init) else { throw HTTPError.notFound }
        try useCases.sessions.revokeSession(id, of: principal)
        return Response(status: 204, headers: id == principal.sessionID && principal.viaCookie ? [Cookies.clearSession] : [])
    }

    /// `POST /auth/logout`: ends the caller's session (204).
    package static func logout(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let principal = try Caller.authenticate(request, useCases)
        try useCases.sessions.signOut(principal)
        return Response(status: 204, headers: principal.viaCookie ? [Cookies.clearSession] : [])
    }

    /// `GET /auth/account/export`: everything stored about the caller, as a JSON download (a few
    /// times an hour at most).
    package static func export(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let principal = try Caller.authenticate(request, useCases)
        let export = try useCases.account.exportAccount(of: principal, remoteAddress: request.remoteAddress)
        let body = AccountExportJSON.json(export)
        return Response(
            status: 200,
            headers: [
                ("Cache-Control", "no-store"),
                ("Content-Disposition", #"attachment; filename="account-\#(principal.userID).json""#),
            ], body: Array(body.utf8))
    }

    /// `DELETE /auth/account`: deletes the user and everything theirs (204).
    package static func deleteAccount(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        let principal = try Caller.authenticate(request, useCases)
        try useCases.account.deleteAccount(of: principal, remoteAddress: request.remoteAddress)
        return Response(status: 204, headers: principal.viaCookie ? [Cookies.clearSession] : [])
    }

    /// `GET /auth/jwks.json`: the public keys of our access tokens.
    package static func jwks(_ request: Request, _ context: RouteContext, _ useCases: UseCases) throws -> Response {
        Response(
            status: 200, headers: [("Cache-Control", "public, max-age=300")], body: Array(try useCases.sessions.accessTokenKeySet().utf8))
    }

    /// The profile as JSON (the `user` of `/auth/me` and of a sign-in).
    static func json(_ profile: Profile) -> String {
        let emails = profile.emails.map { email in
            JSONText.object([
                ("address", .string(email.address)), ("isPrivateRelay", .bool(email.isPrivateRelay)),
                ("forwardingEnabled", .bool(email.forwardingEnabled)), ("verified", .bool(email.verified)),
            ])
        }
        return JSONText.object([
            ("id", .string(String(profile.userID))), ("firstName", profile.firstName.map { .string($0) }),
            ("lastName", profile.lastName.map { .string($0) }), ("createdAt", .integer(profile.createdAt)),
            ("emails", .raw("[" + emails.joined(separator: ",") + "]")), ("guest", .bool(profile.isGuest)),
            ("externalId", profile.externalID.map { .string($0) }),
        ])
    }
}
