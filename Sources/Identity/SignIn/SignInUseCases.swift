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
        let session = try SessionOpening(flow: "native", credential: .refreshToken)
        let (account, sessionID) = try signInWithApple(attempt, opening: session, device: device, remoteAddress: remoteAddress, link: link)
        guard let profile = try account.newProfile ?? Profile.load(userID: account.userID, on: database) else {
            throw IdentityError(.accountGone)
        }
        return try grant(session, userID: account.userID, sessionID: sessionID, profile: profile, isNewUser: account.isNewUser)
    }

    /// A sign-in of a page of this site with Apple's credential from Sign in with Apple JS (its
    /// popup), into the cookie session the account pages use rather than tokens: as `signIn`, the
    /// session authenticated by the returned cookie secret.
    /// - Returns: the user, whether they are new, and the session cookie's value.
    package func signInWithCookie(_ attempt: SignInAttempt, device: String?, remoteAddress: String?) throws -> (
        profile: Profile, isNewUser: Bool, cookie: String
    ) {
        try core.metrics.counting(core.metrics.signIns, ["web"], success: "success") {
            let session = try SessionOpening(flow: "web", credential: .cookie)
            let (account, _) = try signInWithApple(attempt, opening: session, device: device, remoteAddress: remoteAddress, link: nil)
            guard let profile = try account.newProfile ?? Profile.load(userID: account.userID, on: database) else {
                throw IdentityError(.accountGone)
            }
            return (profile, account.isNewUser, session.cookie)
        }
    }

    /// The one sign-in with Apple's credential: verifies it, finds or creates the user, and opens
    /// `opening`'s session, in one transaction retried on a conflict.
    private func signInWithApple(
        _ attempt: SignInAttempt, opening: SessionOpening, device: String?, remoteAddress: String?, link: SignInLink?
    ) throws -> (SignedInAccount, UInt64) {
        _ = try requireSessions()
        let checkedLink = try link.map(check)
        let verified = try verify(attempt, audience: nil, redirectURI: .requested)
        let account: SignedInAccount
        let sessionID: UInt64
        do {
            (account, sessionID) =
                try retryingConflicts {
                    try NonceClaim.refusingReuse {
                        try transaction { connection in
                            if let checkedLink { try use(checkedLink, on: connection) }
                            let account = try AppleAccounts.signIn(
                                verified.signIn, attachingTo: checkedLink?.target, newUserID: { try newID(.users) }, on: connection)
                            try verified.unclaimedNonce?.claim(in: connection)
                            let sessionID = try openSession(
                                opening, userID: account.userID, appleClientID: verified.signIn.audience, device: device,
                                userIsNew: account.isNewUser, remoteAddress: remoteAddress, detail: [("newUser", .bool(account.isNewUser))],
                                on: connection)
                            try reportIfCreated(account, verified.signIn, flow: opening.flow, on: connection)
                            try reportIfLinked(account, link: checkedLink, on: connection)
                            return (account, sessionID)
                        }
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
        let nonce = NonceClaim(attempt.nonce, of: identity, leeway: apple.settings.leeway)
        var sealed: SealedAppleToken?
        if let code {
            let exchangeCode = {
                try self.exchange(code, for: identity, redirectURI: exchangeRedirectURI, apple: apple, settings: settings)
            }
            sealed = try nonce.map { try $0.claimAround(on: database, logger: logger, exchange: exchangeCode) } ?? exchangeCode()
        }
        let signIn = AppleSignIn(
            teamID: apple.settings.teamID, sub: identity.subject, audience: identity.audience, email: identity.email,
            emailVerified: identity.emailVerified,
            isPrivateEmail: identity.emailIsPrivateRelay(domains: apple.settings.relayDomains),
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

/// Guest accounts and link tokens: the ways an account exists before its Apple ID is attached.
extension SignInUseCases {
    /// Makes a guest user and opens their first session.
    /// - Throws: `IdentityError(.guestsDisabled)` unless guest accounts are turned on.
    package func createGuest(device: String?, remoteAddress: String?) throws -> Grant {
        try core.metrics.counting(core.metrics.signIns, ["guest"], success: "success") {
            let settings = try requireSessions()
            guard settings.guestAccounts else { throw IdentityError(.guestsDisabled) }
            let session = try SessionOpening(flow: "guest", credential: .refreshToken)
            let (userID, sessionID, createdAt) = try retryingConflicts {
                try transaction { connection in
                    let userID = try newID(.users)
                    let createdAt = try Guests.create(id: userID, on: connection)
                    let sessionID = try openSession(
                        session, userID: userID, appleClientID: nil, device: device, userIsNew: true, remoteAddress: remoteAddress,
                        detail: [("newUser", .bool(true))], on: connection)
                    try report(.userCreated(flow: "guest", email: nil, firstName: nil, lastName: nil), userID: userID, on: connection)
                    return (userID, sessionID, createdAt)
                }
            }
            let profile = Profile(userID: userID, firstName: nil, lastName: nil, createdAt: createdAt, emails: [], isGuest: true)
            return try grant(session, userID: userID, sessionID: sessionID, profile: profile, isNewUser: true)
        }
    }

    /// Mints a link token for the older backend's user `externalID`, after checking the backend's
    /// secret `presentedSecret` (in constant time against each configured one).
    /// - Throws: `IdentityError(.notFound)` when linking is not set up, `.linkingRefused` for a
    ///   wrong secret.
    package func mintLinkToken(externalID: String, presentedSecret: String) throws -> LinkToken {
        let settings = try requireSessions()
        guard !settings.linkSecrets.isEmpty else { throw IdentityError(.notFound) }
        let presented = Array(presentedSecret.utf8)
        // Every secret is compared, so the time taken does not tell which one came close.
        let accepted = settings.linkSecrets.reduce(false) { $0 || constantTimeEquals(presented, $1) }
        guard accepted else {
            logger.warning("link token refused: wrong link secret")
            throw IdentityError(.linkingRefused)
        }
        let token = try OpaqueToken()
        try LinkTokens.mint(hash: token.hash, externalID: externalID, lifetime: settings.linkTokenLifetime, on: database)
        return LinkToken(value: token.value, externalID: externalID, expiresIn: settings.linkTokenLifetime)
    }

    /// Checks `link` before anything is sent to Apple: the guest session must be active, the link
    /// token usable.
    func check(_ link: SignInLink) throws -> CheckedLink {
        switch link {
        case .guestSession(let accessToken):
            let principal = try SessionUseCases(context: context).authenticate(accessToken: accessToken)
            return CheckedLink(target: .guest(userID: principal.userID), linkTokenHash: nil)
        case .linkToken(let value):
            guard let hash = OpaqueToken.hash(of: value) else { throw IdentityError(.linkTokenUnknown) }
            let externalID = try Self.refusingLinkTokens { try LinkTokens.check(hash: hash, on: database) }
            return CheckedLink(target: .externalUser(id: externalID), linkTokenHash: hash)
        }
    }

    /// Uses up the checked link's token, if any, in the sign-in's transaction.
    func use(_ link: CheckedLink, on connection: Connection) throws {
        guard let hash = link.linkTokenHash else { return }
        _ = try Self.refusingLinkTokens { try LinkTokens.use(hash: hash, on: connection) }
    }

    /// Reports an identity this sign-in attached to an account that had none of it yet.
    func reportIfLinked(_ account: SignedInAccount, link: CheckedLink?, on connection: Connection) throws {
        guard let linkedBy = account.linkedBy else { return }
        if let hash = link?.linkTokenHash { try LinkTokens.recordUser(account.userID, hash: hash, on: connection) }
        var externalID: String?
        if case .externalUser(let id) = link?.target { externalID = id }
        try report(.appleIdLinked(by: linkedBy.rawValue, externalID: externalID), userID: account.userID, on: connection)
        try AuditLog.record(
            "apple_id_linked", userID: account.userID, remoteAddress: nil,
            detail: JSONText.object([("by", .string(linkedBy.rawValue))]), on: connection)
    }

    /// Runs `body`, turning a link-token refusal into its domain error.
    static func refusingLinkTokens<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let refusal as LinkTokens.Refusal {
            switch refusal {
            case .unknown: throw IdentityError(.linkTokenUnknown)
            case .expired: throw IdentityError(.linkTokenExpired)
            case .used: throw IdentityError(.linkTokenUsed)
            }
        }
    }

    /// Turns a refused placement into its domain error.
    static func identityError(_ conflict: AccountConflict) -> IdentityError {
        switch conflict.kind {
        case .identityInUse: IdentityError(.identityInUse)
        case .externalUserLinked: IdentityError(.externalUserLinked)
        case .guestGone: IdentityError(.accountGone)
        case .guestLinked: IdentityError(.guestLinked)
        }
    }
}
