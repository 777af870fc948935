package import AccountData
import Accounts
import AppleID
import CoreMetrics
import Foundation
import HTTPClient
import JOSE
import Logging
import MariaDB
import Telemetry

/// Who is calling a protected operation: the user and the session, and how they proved it.
package struct Principal: Sendable, Equatable {
    package var userID: UInt64
    package var sessionID: UInt64
    /// True for the web page's session cookie, false for a Bearer access token.
    package var viaCookie: Bool

    package init(userID: UInt64, sessionID: UInt64, viaCookie: Bool) {
        self.userID = userID
        self.sessionID = sessionID
        self.viaCookie = viaCookie
    }
}

/// The app's own sessions: checking access tokens and session cookies, refreshing, signing
/// out, and a user's list of their sessions.
package struct SessionUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension SessionUseCases {
    /// Seconds a session lives without a refresh (the web session cookie's `Max-Age`).
    package var sessionLifetime: Int { core.sessions?.lifetime ?? 0 }

    /// The site's origin (`SIWA_PUBLIC_URL`), nil when sessions are not configured.
    package var publicURL: String? { core.sessions?.publicURL }

    /// The caller of an access token whose session is still active: known active to the session
    /// cache, or read from the database (and then remembered).
    /// - Throws: `IdentityError(.accessTokenRefused)` or `(.sessionEnded)`.
    package func authenticate(accessToken: String) throws -> Principal {
        let principal = try authenticateDeferringSessionCheck(accessToken: accessToken)
        let cache = core.sessionCache
        if cache.isKnownActive(userID: principal.userID, sessionID: principal.sessionID) { return principal }
        let readStartedAt = SessionCache.now()
        guard let secondsLeft = try Sessions.secondsLeft(sessionID: principal.sessionID, userID: principal.userID, on: database) else {
            throw IdentityError(.sessionEnded)
        }
        cache.remember(userID: principal.userID, sessionID: principal.sessionID, secondsLeft: secondsLeft, readStartedAt: readStartedAt)
        return principal
    }

    /// The caller of a valid access token, without checking that its session is still active:
    /// only for an operation whose own statements check it (`sync`), saving a round trip.
    package func authenticateDeferringSessionCheck(accessToken: String) throws -> Principal {
        let claims = try requireSessions().accessTokens.verify(accessToken)
        return Principal(userID: claims.userID, sessionID: claims.sessionID, viaCookie: false)
    }

    /// The caller of a web session cookie.
    /// - Throws: `IdentityError(.sessionEnded)` when no active session has this cookie.
    package func authenticate(cookie: String) throws -> Principal {
        guard cookie.utf8.count <= 128, let session = try Sessions.active(cookieHash: SHA256.hash(Array(cookie.utf8)), on: database)
        else { throw IdentityError(.sessionEnded) }
        return Principal(userID: session.userID, sessionID: session.sessionID, viaCookie: true)
    }

    /// Rotates a refresh token: the presented one is spent, a new one and a new access token are
    /// issued. A spent token presented again ends its session (reuse detection).
    /// - Throws: `IdentityError` `.refreshTokenUnknown`, `.sessionEnded` or `.refreshTokenReused`.
    package func refresh(refreshToken presented: String, remoteAddress: String?) throws -> Grant {
        let settings = try requireSessions()
        guard let presentedHash = OpaqueToken.hash(of: presented) else { throw IdentityError(.refreshTokenUnknown) }
        let next = try OpaqueToken()
        let rotation = try retryingConflicts {
            try transaction { connection in
                let rotation = try Sessions.rotate(
                    presentedHash: presentedHash, nextHash: next.hash, lifetime: settings.lifetime,
                    maximumLifetime: settings.maximumLifetime,
                    reuseInterval: settings.refreshReuseInterval, remoteAddress: remoteAddress, on: connection)
                if case .reused(let session) = rotation {
                    try report(
                        .sessionsRevoked(ids: [session.sessionID], reason: "refresh_token_reuse"), userID: session.userID, on: connection)
                }
                return rotation
            }
        }
        core.metrics.refreshes[rotation.metricLabel].increment()
        switch rotation {
        case .rotated(let session), .reissued(let session):
            return try issue(userID: session.userID, sessionID: session.sessionID, refreshToken: next.value)
        case .unknown:
            throw IdentityError(.refreshTokenUnknown)
        case .inactive:
            throw IdentityError(.sessionEnded)
        case .reused(let session):
            core.sessionCache.forget(userID: session.userID, sessionID: session.sessionID)
            logger.warning(
                "refresh token reused: session revoked", metadata: ["user": "\(session.userID)", "session": "\(session.sessionID)"])
            throw IdentityError(.refreshTokenReused)
        }
    }

    /// The public keys of our access tokens, as a JWKS.
    package func accessTokenKeySet() throws -> String {
        try requireSessions().accessTokens.jwks()
    }

    /// Ends the caller's own session.
    package func signOut(_ principal: Principal) throws {
        _ = try endSession(principal.sessionID, of: principal.userID, reason: "logout")
    }

    /// Ends one of the caller's sessions.
    /// - Throws: `IdentityError(.notFound)` for a session that is not the caller's or not active.
    package func revokeSession(_ sessionID: UInt64, of principal: Principal) throws {
        guard try endSession(sessionID, of: principal.userID, reason: "revoked_by_user") else { throw IdentityError(.notFound) }
    }

    /// The caller's active sessions.
    package func sessions(of principal: Principal) throws -> [SessionSummary] {
        try Sessions.list(userID: principal.userID, on: database)
    }
}

/// Ending a session is part of signing out, of a refresh token's reuse, and of an app's code
/// presented again (opening one: `SessionOpening`).
extension UseCase {
    /// Ends `userID`'s session `sessionID` and reports it; false when it was not theirs or not active.
    func endSession(_ sessionID: UInt64, of userID: UInt64, reason: String) throws -> Bool {
        let revoked = try retryingConflicts {
            try transaction { connection in
                guard try Sessions.revoke(sessionID, of: userID, reason: reason, on: connection) else { return false }
                try report(.sessionsRevoked(ids: [sessionID], reason: reason), userID: userID, on: connection)
                return true
            }
        }
        if revoked { core.sessionCache.forget(userID: userID, sessionID: sessionID) }
        return revoked
    }
}
