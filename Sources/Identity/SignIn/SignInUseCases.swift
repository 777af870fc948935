package import AccountData
import Accounts
import AppleID
import CoreMetrics
import Foundation
import HTTPClient
import JOSE
import Logging
import MariaDB
import StrictJSON
import Telemetry

/// What a client presented to sign in: Apple's identity token, and what came with it.
package struct SignInAttempt: Sendable {
    package var identityToken: String
    /// The authorization code, exchanged at Apple for its refresh token; nil or empty for none.
    package var authorizationCode: String?
    /// The raw nonce, whose lowercase hex SHA-256 the token must carry.
    package var nonce: String?
    /// The user id the app was told by Apple; it may only confirm the token's subject.
    package var claimedUser: String?
    /// The name, which Apple gives only with the first authorization (never in the token).
    package var firstName: String?
    package var lastName: String?
    /// The `redirect_uri` of the authorization, for a Services ID's credential (Android, Flutter,
    /// Sign in with Apple JS): its code is exchanged with it.
    package var redirectURI: String?

    package init(
        identityToken: String, authorizationCode: String? = nil, nonce: String? = nil, claimedUser: String? = nil,
        firstName: String? = nil, lastName: String? = nil, redirectURI: String? = nil
    ) {
        self.identityToken = identityToken
        self.authorizationCode = authorizationCode
        self.nonce = nonce
        self.claimedUser = claimedUser
        self.firstName = firstName
        self.lastName = lastName
        self.redirectURI = redirectURI
    }
}

/// What a sign-in or a refresh hands the client: our access token and refresh token for one
/// session, and after a sign-in the user's profile.
package struct Grant: Sendable {
    package var accessToken: String
    /// Seconds the access token lives.
    package var expiresIn: Int
    package var refreshToken: String
    package var userID: UInt64
    package var sessionID: UInt64
    /// The signed-in user, after a sign-in; nil after a refresh.
    package var profile: Profile?
    package var isNewUser: Bool
}

/// Signing in: with Apple natively (`signIn`) or on the web (`startWebSignIn`,
/// `completeWebCallback`, `redeemWebSignIn`), as a guest (`createGuest`), and the link tokens that
/// attach an Apple ID to an account of the app's older backend (`mintLinkToken`).
package struct SignInUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension SignInUseCases {
    /// Completes a native sign-in: checks Apple's identity token and what came with it (see
    /// `verify(_:audience:redirectURI:)`), then finds or creates the user and opens a session for
    /// `device`, in one transaction retried on a conflict.
    /// - Throws: `SignInError` for a refused identity token; `IdentityError` for a reused nonce,
    ///   a `user` that is not the token's subject, or a code Apple refused or could not take.
    /// - Parameter link: a guest session or a link token that says which account the Apple ID
    ///   goes to (`SignInLink`); checked before Apple is called.
    /// - Throws: also `IdentityError(.identityInUse)` or `.externalUserLinked` when the link would
    ///   put one person's Apple ID on another's account, and the link-token refusals.
    package func signIn(_ attempt: SignInAttempt, device: String?, remoteAddress: String?, link: SignInLink? = nil) throws -> Grant {
        try core.metrics.counting(core.metrics.signIns, ["native"], success: "success") {
            try signInOnce(attempt, device: device, remoteAddress: remoteAddress, link: link)
        }
    }

    private func signInOnce(_ attempt: SignInAttempt, device: String?, remoteAddress: String?, link: SignInLink?) throws -> Grant {
        let refreshToken = try OpaqueToken()
        let (account, sessionID) = try openSession(
            attempt, device: device, remoteAddress: remoteAddress, link: link, refreshTokenHash: refreshToken.hash, cookieHash: nil,
            flow: "native")
        guard let profile = try account.newProfile ?? Profile.load(userID: account.userID, on: database) else {
            throw IdentityError(.accountGone)
        }
        var grant = try issue(userID: account.userID, sessionID: sessionID, refreshToken: refreshToken.value)
        grant.profile = profile
        grant.isNewUser = account.isNewUser
        return grant
    }

    /// A sign-in of a page of this site with Apple's credential from Sign in with Apple JS (its
    /// popup), into the cookie session the account pages use rather than tokens: as `signIn`, the
    /// session authenticated by the returned cookie secret.
    /// - Returns: the user, whether they are new, and the session cookie's value.
    package func signInWithCookie(_ attempt: SignInAttempt, device: String?, remoteAddress: String?) throws -> (
        profile: Profile, isNewUser: Bool, cookie: String
    ) {
        try core.metrics.counting(core.metrics.signIns, ["web"], success: "success") {
            let cookie = try OpaqueToken()
            let (account, _) = try openSession(
                attempt, device: device, remoteAddress: remoteAddress, link: nil, refreshTokenHash: nil, cookieHash: cookie.hash,
                flow: "web")
            guard let profile = try account.newProfile ?? Profile.load(userID: account.userID, on: database) else {
                throw IdentityError(.accountGone)
            }
            return (profile, account.isNewUser, cookie.value)
        }
    }

    /// The one sign-in with Apple's credential: verifies it, finds or creates the user, and opens
    /// a session authenticated by a refresh token or a cookie, in one transaction retried on a
    /// conflict.
    private func openSession(
        _ attempt: SignInAttempt, device: String?, remoteAddress: String?, link: SignInLink?, refreshTokenHash: [UInt8]?,
        cookieHash: [UInt8]?, flow: String
    ) throws -> (SignedInAccount, UInt64) {
        let settings = try requireSessions()
        let checkedLink = try link.map(check)
        let verified = try verify(attempt, audience: nil, redirectURI: .requested)
        let account: SignedInAccount
        let sessionID: UInt64
        do {
            (account, sessionID) =
                try retryingConflicts {
                    try transaction { connection in
                        if let checkedLink { try use(checkedLink, on: connection) }
                        let account = try AppleAccounts.signIn(
                            verified.signIn, attachingTo: checkedLink?.target, newUserID: { try newID(.users) }, on: connection)
                        try verified.unclaimedNonce?.claim(in: connection)
                        let sessionID = try newID(.sessions)
                        try Sessions.create(
                            id: sessionID, userID: account.userID, appleClientID: verified.signIn.audience, device: device,
                            refreshTokenHash: refreshTokenHash,
                            cookieHash: cookieHash,
                            lifetime: settings.lifetime, maximumLifetime: settings.maximumLifetime, userIsNew: account.isNewUser,
                            on: connection)
                        try AuditLog.record(
                            "sign_in", userID: account.userID, sessionID: sessionID, remoteAddress: remoteAddress,
                            detail: JSONText.object([("flow", .string(flow)), ("newUser", .bool(account.isNewUser))]), on: connection)
                        try reportIfCreated(account, verified.signIn, flow: flow, on: connection)
                        try reportIfLinked(account, link: checkedLink, on: connection)
                        return (account, sessionID)
                    }
                }
        } catch is AccountDisabled {
            throw IdentityError(.userDisabled)
        } catch let conflict as AccountConflict {
            logger.notice("sign-in refused: the Apple ID and the account it was to go to belong to different users")
            verified.signIn.appleRefreshToken.map { revokeUnkept($0, subject: verified.signIn.sub) }
            throw Self.identityError(conflict)
        } catch let error as IdentityError where [.linkTokenUsed, .linkTokenExpired, .linkTokenUnknown].contains(error.code) {
            verified.signIn.appleRefreshToken.map { revokeUnkept($0, subject: verified.signIn.sub) }
            throw error
        }
        return (account, sessionID)
    }

    /// The one check of every sign-in, native and web: verifies the identity token (signature,
    /// claims, nonce, `c_hash`) at the injected clock; requires `audience` when given; takes `sub`
    /// from the verified token only; with a code, claims the nonce before Apple is called, so that
    /// a replay never reaches Apple, exchanges the code with the client id that the token was
    /// issued to, and seals Apple's refresh token.
    /// - Returns: the sign-in, ready to store, and the nonce still to claim in the transaction that
    ///   stores it (when there was no code).
    func verify(_ attempt: SignInAttempt, audience: String?, redirectURI: RedirectURI) throws -> VerifiedSignIn {
        let apple = try requireApple()
        let settings = try requireSessions()
        let code = attempt.authorizationCode.flatMap { $0.isEmpty ? nil : $0 }
        let identity = try apple.identityTokens.verify(
            attempt.identityToken, nonce: attempt.nonce, authorizationCode: code, now: clock.now())
        if let audience, identity.audience != audience {
            throw SignInError(.audienceMismatch, "aud is not the client id of this flow")
        }
        if let user = attempt.claimedUser, user != identity.subject {
            throw IdentityError(.userMismatch, "`user` is not the subject of the identity token")
        }
        let exchangeRedirectURI: String?
        switch redirectURI {
        case .fixed(let uri): exchangeRedirectURI = uri
        case .requested:
            exchangeRedirectURI = try apple.settings.appRedirectURI(attempt.redirectURI, clientID: identity.audience, hasCode: code != nil)
        }
        // Kept until the token can no longer pass `exp` with the leeway.
        let nonce = attempt.nonce.map {
            NonceClaim(hash: SHA256.hash(Array($0.utf8)), expiresAt: Int64(identity.expiresAt) + Int64(apple.settings.leeway) + 1)
        }
        var sealed: SealedAppleToken?
        if let code {
            // Claimed in a statement of its own before Apple is called, so that a replay never
            // reaches Apple; without a code it is claimed by the sign-in's own transaction. When
            // Apple could not take the code, it is released: the app's retry of the same request
            // then works once Apple is back. So it is when Apple refused the code (`invalid_grant`,
            // such as a registered redirect URI that is not the authorization's): Apple issued
            // nothing for it, so nothing was signed in with this nonce, and the app may retry with
            // the right request. A code that Apple did take was taken by a sign-in whose own claim
            // of its nonce stays.
            try nonce?.claim(on: database)
            do {
                sealed = try exchange(code, for: identity, redirectURI: exchangeRedirectURI, apple: apple, settings: settings)
            } catch let error as IdentityError where [.appleUnavailable, .codeRefused].contains(error.code) {
                nonce?.release(on: database, logger: logger)
                throw error
            }
        }
        let signIn = AppleSignIn(
            teamID: apple.settings.teamID, sub: identity.subject, audience: identity.audience, email: identity.email,
            emailVerified: identity.emailVerified,
            isPrivateEmail: identity.email.map { apple.settings.isRelayAddress($0, tokenSays: identity.isPrivateEmail) },
            transferSub: identity.transferSubject,
            // Apple documents 0, 1 and 2; anything else is not stored.
            realUserStatus: identity.realUserStatus.flatMap { (0...2).contains($0) ? $0 : nil },
            firstName: attempt.firstName, lastName: attempt.lastName, appleRefreshToken: sealed,
            firstValidationIn: RetryPolicy.appleValidations.delay(afterAttempt: 1))
        return VerifiedSignIn(signIn: signIn, unclaimedNonce: code == nil ? nonce : nil)
    }

    /// The `redirect_uri` a code is exchanged with: the flow's own (siwa's web callback), or the one
    /// the app's request named, checked against the client's registered ones.
    enum RedirectURI {
        case fixed(String)
        case requested
    }

    /// A verified sign-in, and its nonce when it is still to be claimed.
    struct VerifiedSignIn {
        let signIn: AppleSignIn
        let unclaimedNonce: NonceClaim?
    }

    /// A nonce's hash and how long it is kept; accepted once.
    struct NonceClaim {
        let hash: [UInt8]
        let expiresAt: Int64

        /// Claims it at once, in a statement of its own.
        /// - Throws: `IdentityError(.nonceReused)` when it was claimed before.
        func claim(on database: Connection) throws {
            guard try Nonces.consume(hash: hash, expiresAt: expiresAt, on: database) else {
                throw IdentityError(.nonceReused, "this nonce was already used; start a new sign-in")
            }
        }

        /// Releases a claim whose code Apple never used. A failure is logged: the nonce then stays
        /// spent, and the app starts a new sign-in, as before.
        func release(on database: Connection, logger: Logger) {
            do {
                try Nonces.release(hash: hash, on: database)
            } catch {
                logger.warning("a nonce could not be released after Apple's failure", metadata: ["error": "\(error)"])
            }
        }

        /// Claims it in the open transaction, with its next statement or its COMMIT: a nonce used
        /// before fails the transaction, and `WorkerContext.transaction` throws
        /// `IdentityError(.nonceReused)`. Two sign-ins with one nonce at once: the second one's claim
        /// waits for the first one's transaction, and fails once it commits.
        func claim(in transaction: Connection) throws {
            try Nonces.consumeWithNext(hash: hash, expiresAt: expiresAt, on: transaction)
        }
    }

    /// Exchanges an authorization code at Apple with the client id the identity token was issued to,
    /// checks that Apple's answer is for the same `sub` and `aud` (a token without `c_hash` does not
    /// bind the code to itself), and seals the refresh token Apple returns.
    /// - Throws: `IdentityError(.codeMismatch)` when the code belongs to another identity.
    private func exchange(
        _ code: String, for identity: IdentityToken, redirectURI: String?, apple: AppleServices, settings: SessionSettings
    ) throws -> SealedAppleToken? {
        let clientID = identity.audience
        do {
            let client = appleClient(apple)
            let tokens = try apple.calls.pass(
                { try client.exchangeCode(code, clientID: clientID, redirectURI: redirectURI) },
                unreachable: { ($0 as? AppleAPIError)?.code == .unreachable })
            let sealed = try tokens.refreshToken.map { try settings.dataKeys.seal($0, clientID: clientID) }
            guard let owner = tokens.idTokenIdentity, owner.subject == identity.subject, owner.audience == clientID else {
                logger.warning("an authorization code of another identity", metadata: ["client": "\(clientID)"])
                // That other sign-in's refresh token is not kept.
                if let sealed { revokeUnkept(sealed, subject: tokens.idTokenIdentity?.subject) }
                throw IdentityError(.codeMismatch, "the authorization code was not issued with this identity token")
            }
            return sealed
        } catch let error as AppleAPIError {
            switch error.code {
            case .invalidGrant:
                throw IdentityError(.codeRefused, "Apple refused the authorization code (expired, used, or for another client)")
            case .unreachable, .unexpectedResponse:
                logger.warning("Apple token endpoint unavailable", metadata: ["error": "\(error)"])
                throw IdentityError(.appleUnavailable, "Apple could not be reached; try again shortly")
            default:
                logger.error("Apple refused our client", metadata: ["error": "\(error)", "client": "\(clientID)"])
                throw IdentityError(.appleRefusedCredentials, "Apple refused the server's credentials")
            }
        }
    }

    /// Queues at Apple the revocation of a refresh token that a sign-in obtained and does not keep
    /// (a code of another sign-in, a sign-in refused after the exchange), unless an account here
    /// holds that person's Apple identity: revoking any of their tokens ends the whole authorization
    /// of the app at Apple, and that account's with it. A failure is logged; nothing else depends
    /// on it.
    /// - Parameter subject: the token's `sub`; nil when Apple's answer did not say.
    func revokeUnkept(_ token: SealedAppleToken, subject: String?) {
        do {
            if let subject, let teamID = core.apple?.settings.teamID,
                try AppleAccounts.isKnown(teamID: teamID, sub: subject, on: database)
            {
                return
            }
            try AppleRevocationOutbox.queue(token, on: database)
            logger.notice(
                "an Apple refresh token that no account keeps was queued for revocation", metadata: ["client": "\(token.clientID)"])
        } catch {
            logger.error("an Apple refresh token that no account keeps could not be queued for revocation", metadata: ["error": "\(error)"])
        }
    }

    /// Reports `user.created` when the sign-in created the account; runs in its transaction.
    func reportIfCreated(_ account: SignedInAccount, _ signIn: AppleSignIn, flow: String, on connection: Connection) throws {
        guard account.isNewUser else { return }
        try report(
            .userCreated(flow: flow, email: signIn.email, firstName: signIn.firstName, lastName: signIn.lastName), userID: account.userID,
            on: connection)
    }
}
