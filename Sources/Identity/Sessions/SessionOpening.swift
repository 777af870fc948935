import AccountData
import Accounts
import MariaDB
import StrictJSON

/// A session a sign-in opens: the one way every flow opens one (a native sign-in with Apple and its
/// cookie form, a guest, the web's redemption, an app's code). Made before the transaction, so
/// that a transaction retried after a conflict stores the same secret.
///
/// 1. `openSession(_:userID:...)`, in the flow's transaction: the session's id, its row (and its
///    refresh token's), and the `sign_in` audit event.
/// 2. After the commit: `grant(_:userID:sessionID:profile:isNewUser:)`, our access token and the
///    refresh token (apps), or `cookie`, the session cookie's value (this site's pages).
struct SessionOpening {
    /// How the session is authenticated.
    enum Credential {
        /// Rotating refresh tokens, the first one `secret`: an app's session.
        case refreshToken
        /// A cookie whose value is `secret`: a session of this site's pages.
        case cookie
    }

    /// The flow, as the audit event names it: `native`, `web`, `guest`, `app`.
    let flow: String
    let credential: Credential
    /// The first refresh token, or the cookie's value; stored only as its hash.
    let secret: OpaqueToken

    init(flow: String, credential: Credential) throws {
        self.flow = flow
        self.credential = credential
        self.secret = try OpaqueToken()
    }

    /// The session cookie's value, for a session authenticated by a cookie.
    var cookie: String {
        precondition(credential == .cookie, "a session authenticated by refresh tokens has no cookie")
        return secret.value
    }
}

extension UseCase {
    /// Opens `opening`'s session of `userID` in the open transaction: reserves its id, writes its
    /// row (and its first refresh token's), and records the `sign_in` audit event, whose detail is
    /// the flow and then `detail`.
    /// - Parameters:
    ///   - appleClientID: the client id of the Apple sign-in the session depends on; nil for a guest.
    ///   - userIsNew: the user was created by this transaction, so cannot be disabled (one
    ///     statement less).
    /// - Returns: the session's id.
    /// - Throws: `AccountDisabled` when the user is disabled (the caller's refusal);
    ///   `IdentityError(.notConfigured)` without sessions.
    func openSession(
        _ opening: SessionOpening, userID: UInt64, appleClientID: String?, device: String?, userIsNew: Bool, remoteAddress: String?,
        detail: [(String, JSONText.Value?)], on connection: Connection
    ) throws -> UInt64 {
        let settings = try requireSessions()
        let sessionID = try newID(.sessions)
        try Sessions.create(
            id: sessionID, userID: userID, appleClientID: appleClientID, device: device,
            refreshTokenHash: opening.credential == .refreshToken ? opening.secret.hash : nil,
            cookieHash: opening.credential == .cookie ? opening.secret.hash : nil, lifetime: settings.lifetime,
            maximumLifetime: settings.maximumLifetime, userIsNew: userIsNew, on: connection)
        try AuditLog.record(
            "sign_in", userID: userID, sessionID: sessionID, remoteAddress: remoteAddress,
            detail: JSONText.object([("flow", .string(opening.flow))] + detail), on: connection)
        return sessionID
    }

    /// What the client gets for a session opened with refresh tokens, once its transaction has
    /// committed: a new access token, the first refresh token, and the user.
    func grant(_ opening: SessionOpening, userID: UInt64, sessionID: UInt64, profile: Profile, isNewUser: Bool) throws -> Grant {
        precondition(opening.credential == .refreshToken, "a cookie session gets no grant")
        var grant = try issue(userID: userID, sessionID: sessionID, refreshToken: opening.secret.value)
        grant.profile = profile
        grant.isNewUser = isNewUser
        return grant
    }

    /// A new access token for the session, with `refreshToken` as its refresh token (a sign-in's
    /// first one, or a refresh's next one).
    func issue(userID: UInt64, sessionID: UInt64, refreshToken: String) throws -> Grant {
        let access = try requireSessions().accessTokens.issue(userID: userID, sessionID: sessionID)
        return Grant(
            accessToken: access.token, expiresIn: access.expiresIn, refreshToken: refreshToken, userID: userID, sessionID: sessionID,
            profile: nil, isNewUser: false)
    }
}
