import Accounts
package import FastCGI
import JOSE
import Logging
import MariaDB

/// The signed-in user's own routes: profile, sessions, sign-out, account deletion, and our JWKS.
/// Every one but the JWKS goes through `Authentication.authenticate`.
package enum AccountRoutes {
    /// `GET /auth/me`: the profile with the emails and their relay and forwarding flags.
    package static func me(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        guard let profile = try Profile.load(userID: principal.userID, on: context.database) else {
            throw Authentication.unauthorized("The account no longer exists")
        }
        let body = JSONText.object([("user", .raw(json(profile))), ("sessionId", .string(String(principal.sessionID)))])
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(body.utf8))
    }

    /// `GET /auth/sessions`: the user's active sessions, the caller's marked `current`.
    package static func sessions(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        let sessions = try Sessions.list(userID: principal.userID, on: context.database).map { session in
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

    /// `DELETE /auth/sessions/{id}`: ends one of the user's sessions (204), 404 for any other id.
    package static func revokeSession(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        guard let id = parameters["id"].flatMap(UInt64.init),
            try Sessions.revoke(id, of: principal.userID, reason: "revoked_by_user", on: context.database)
        else { throw HTTPError.notFound }
        return Response(status: 204, headers: id == principal.sessionID && principal.viaCookie ? [clearSessionCookie] : [])
    }

    /// `POST /auth/logout`: ends the caller's session (204).
    package static func logout(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        _ = try Sessions.revoke(principal.sessionID, reason: "logout", on: context.database)
        return Response(status: 204, headers: principal.viaCookie ? [clearSessionCookie] : [])
    }

    /// `DELETE /auth/account`: deletes the user and everything theirs in one transaction (204); the
    /// revocation at Apple waits in the outbox for `siwa jobs`, so this never waits on Apple.
    package static func deleteAccount(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        let deleted = try context.database.transaction {
            try AccountDeletion.delete(userID: principal.userID, remoteAddress: request.remoteAddress, on: context.database)
        }
        guard deleted else { throw HTTPError.notFound }
        context.logger.notice("account deleted", metadata: ["user": "\(principal.userID)"])
        return Response(status: 204, headers: principal.viaCookie ? [clearSessionCookie] : [])
    }

    /// `GET /auth/jwks.json`: the public keys of our access tokens.
    package static func jwks(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let settings = try context.requireSessions()
        return Response(status: 200, headers: [("Cache-Control", "public, max-age=300")], body: Array(settings.accessTokens.jwks().utf8))
    }

    static let clearSessionCookie = Authentication.setCookie(Authentication.sessionCookie, "", maxAge: 0)

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
            ("emails", .raw("[" + emails.joined(separator: ",") + "]")),
        ])
    }
}
