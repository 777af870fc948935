import Accounts
import AppleID
package import FastCGI
import Foundation
import JOSE
import Logging
import MariaDB

/// `POST /auth/apple` (native sign-in) and `POST /auth/refresh`.
package enum NativeSignIn {
    struct SignInBody: Decodable {
        struct FullName: Decodable {
            var givenName: String?
            var familyName: String?
        }

        var identityToken: String
        var authorizationCode: String?
        var nonce: String?
        var user: String?
        var fullName: FullName?
        var device: String?
    }

    /// Verifies Apple's identity token, exchanges the authorization code, finds or creates the user
    /// and opens a session for the device.
    package static func signIn(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let apple = try context.requireApple()
        let settings = try context.requireSessions()
        let body = try request.decodeJSON(SignInBody.self)
        _ = try limited(body.identityToken, "identityToken", maximum: 16_384)
        let code = try limited(body.authorizationCode, "authorizationCode", maximum: 1024).flatMap { $0.isEmpty ? nil : $0 }
        let nonce = try limited(body.nonce, "nonce", maximum: 256)
        _ = try limited(body.user, "user", maximum: 255)
        let device = try limited(body.device, "device", maximum: 512)
        _ = try limited(body.fullName?.givenName, "fullName.givenName", maximum: 1024)
        _ = try limited(body.fullName?.familyName, "fullName.familyName", maximum: 1024)

        let now = Date().timeIntervalSince1970
        let identity = try apple.identityTokens.verify(body.identityToken, nonce: nonce, authorizationCode: code, now: now)
        // `sub` comes from the verified token only; the app's `user` may only confirm it.
        if let user = body.user, user != identity.subject {
            throw HTTPError(401, "user_mismatch", "`user` is not the subject of the identity token")
        }
        let nonceHash = nonce.map { SHA256.hash(Array($0.utf8)) }
        var sealed: SealedAppleToken?
        if let code {
            // A cheap early look, so that a replay does not reach Apple; the insert below decides.
            if let nonceHash, try Nonces.isUsed(hash: nonceHash, on: context.database) { throw nonceReused }
            sealed = try exchange(code, clientID: identity.audience, redirectURI: nil, context: context, apple: apple, settings: settings)
        }
        let signIn = AppleSignIn(
            teamID: apple.settings.teamID, sub: identity.subject, audience: identity.audience, email: identity.email,
            emailVerified: identity.emailVerified, isPrivateEmail: identity.isPrivateEmail, transferSub: identity.transferSubject,
            firstName: body.fullName?.givenName, lastName: body.fullName?.familyName, appleRefreshToken: sealed)
        let refreshToken = try OpaqueToken()
        let nonceExpiry = Int64(identity.expiresAt) + Int64(apple.settings.leeway) + 1
        let (account, sessionID) = try retryingConflicts {
            try context.database.transaction {
                if let nonceHash, try !Nonces.consume(hash: nonceHash, expiresAt: nonceExpiry, on: context.database) {
                    throw nonceReused
                }
                let account = try AppleAccounts.signIn(signIn, on: context.database)
                let sessionID = try Sessions.create(
                    userID: account.userID, device: device, refreshTokenHash: refreshToken.hash, cookieHash: nil,
                    lifetime: settings.lifetime, on: context.database)
                try AuditLog.record(
                    "sign_in", userID: account.userID, sessionID: sessionID, remoteAddress: request.remoteAddress,
                    detail: JSONText.object([("flow", .string("native")), ("newUser", .bool(account.isNewUser))]), on: context.database)
                return (account, sessionID)
            }
        }
        return try tokenResponse(
            userID: account.userID, sessionID: sessionID, refreshToken: refreshToken.value, account: account, settings: settings,
            context: context)
    }

    struct RefreshBody: Decodable {
        var refreshToken: String
    }

    /// Rotates a refresh token: the presented one is spent, a new one and a new access token are
    /// issued. A spent token presented again ends its session (reuse detection).
    package static func refresh(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let settings = try context.requireSessions()
        let body = try request.decodeJSON(RefreshBody.self)
        guard let presented = OpaqueToken.hash(of: body.refreshToken) else {
            throw HTTPError(401, "invalid_token", "The refresh token is not valid")
        }
        let next = try OpaqueToken()
        let rotation = try retryingConflicts {
            try context.database.transaction {
                try Sessions.rotate(
                    presentedHash: presented, nextHash: next.hash, lifetime: settings.lifetime, remoteAddress: request.remoteAddress,
                    on: context.database)
            }
        }
        switch rotation {
        case .rotated(let session):
            return try tokenResponse(
                userID: session.userID, sessionID: session.sessionID, refreshToken: next.value, account: nil, settings: settings,
                context: context)
        case .unknown: throw HTTPError(401, "invalid_token", "The refresh token is not valid")
        case .inactive: throw HTTPError(401, "invalid_token", "The session has ended; sign in again")
        case .reused(let session):
            context.logger.warning(
                "refresh token reused: session revoked", metadata: ["user": "\(session.userID)", "session": "\(session.sessionID)"])
            throw HTTPError(401, "token_reused", "This refresh token was already used; the session has been revoked for safety")
        }
    }

    // MARK: - Shared with the web flow

    static let nonceReused = HTTPError(401, "nonce_reused", "This nonce was already used; start a new sign-in")

    /// Exchanges an authorization code at Apple with the client id it was issued to and seals the
    /// refresh token Apple returns.
    static func exchange(
        _ code: String, clientID: String, redirectURI: String?, context: WorkerContext, apple: AppleServices, settings: SessionSettings
    ) throws -> SealedAppleToken? {
        do {
            let tokens = try context.appleClient(apple).exchangeCode(code, clientID: clientID, redirectURI: redirectURI)
            return try tokens.refreshToken.map { try settings.dataKeys.seal($0, clientID: clientID) }
        } catch let error as AppleAPIError {
            switch error.code {
            case .invalidGrant:
                throw HTTPError(400, "invalid_grant", "Apple refused the authorization code (expired, used, or for another client)")
            case .unreachable, .unexpectedResponse:
                context.logger.warning("Apple token endpoint unavailable", metadata: ["error": "\(error)"])
                throw HTTPError(503, "apple_unavailable", "Apple could not be reached; try again shortly")
            default:
                context.logger.error("Apple refused our client", metadata: ["error": "\(error)", "client": "\(clientID)"])
                throw HTTPError(502, "apple_error", "Apple refused the server's credentials")
            }
        }
    }

    /// `{accessToken, tokenType, expiresIn, refreshToken, sessionId}`, and after a sign-in `user` and `isNewUser`.
    static func tokenResponse(
        userID: UInt64, sessionID: UInt64, refreshToken: String, account: SignedInAccount?, settings: SessionSettings,
        context: WorkerContext
    ) throws -> Response {
        let access = try settings.accessTokens.issue(userID: userID, sessionID: sessionID)
        var members: [(String, JSONText.Value?)] = [
            ("accessToken", .string(access.token)), ("tokenType", .string("Bearer")), ("expiresIn", .integer(Int64(access.expiresIn))),
            ("refreshToken", .string(refreshToken)), ("sessionId", .string(String(sessionID))),
        ]
        if let account {
            guard let profile = try account.newProfile ?? Profile.load(userID: userID, on: context.database) else { throw HTTPError.notFound }
            members.append(("user", .raw(AccountRoutes.json(profile))))
            members.append(("isNewUser", .bool(account.isNewUser)))
        }
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(JSONText.object(members).utf8))
    }
}
