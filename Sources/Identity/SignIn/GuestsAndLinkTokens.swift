import AccountData
import Accounts
import JOSE
import Logging
import MariaDB
import StrictJSON

/// What a sign-in brings besides Apple's token to attach the Apple ID to an account that exists
/// without one.
package enum SignInLink: Sendable, Equatable {
    /// The access token of a guest session (`POST /auth/guest`): the guest becomes the signed-in
    /// user, with everything they synced.
    case guestSession(accessToken: String)
    /// A link token the app's older backend minted for one of its users (`POST /internal/link-tokens`).
    case linkToken(String)
}

/// A link whose token was checked before Apple is called: a refused guest session or link token
/// costs no code exchange and no nonce.
struct CheckedLink {
    let target: AccountTarget
    /// The link token's hash, used up in the sign-in's transaction.
    let linkTokenHash: [UInt8]?
}

/// A new link token for the older backend.
package struct LinkToken: Sendable, Equatable {
    package var value: String
    package var externalID: String
    /// Seconds it can be used.
    package var expiresIn: Int
}

/// Guest accounts and link tokens: the ways an account exists before its Apple ID is attached.
extension SignInUseCases {
    /// Makes a guest user and opens their first session.
    /// - Throws: `IdentityError(.guestsDisabled)` unless guest accounts are turned on.
    package func createGuest(device: String?, remoteAddress: String?) throws -> Grant {
        try core.metrics.counting(core.metrics.signIns, ["guest"], success: "success") {
            let settings = try requireSessions()
            guard settings.guestAccounts else { throw IdentityError(.guestsDisabled) }
            let refreshToken = try OpaqueToken()
            let (userID, sessionID, createdAt) = try retryingConflicts {
                try transaction { connection in
                    let userID = try newID(.users)
                    let sessionID = try newID(.sessions)
                    let createdAt = try Guests.create(id: userID, on: connection)
                    try Sessions.create(
                        id: sessionID, userID: userID, appleClientID: nil, device: device, refreshTokenHash: refreshToken.hash,
                        cookieHash: nil,
                        lifetime: settings.lifetime, maximumLifetime: settings.maximumLifetime, userIsNew: true, on: connection)
                    try AuditLog.record(
                        "sign_in", userID: userID, sessionID: sessionID, remoteAddress: remoteAddress,
                        detail: JSONText.object([("flow", .string("guest")), ("newUser", .bool(true))]), on: connection)
                    try report(.userCreated(flow: "guest", email: nil, firstName: nil, lastName: nil), userID: userID, on: connection)
                    return (userID, sessionID, createdAt)
                }
            }
            var grant = try issue(userID: userID, sessionID: sessionID, refreshToken: refreshToken.value)
            grant.profile = Profile(userID: userID, firstName: nil, lastName: nil, createdAt: createdAt, emails: [], isGuest: true)
            grant.isNewUser = true
            return grant
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
