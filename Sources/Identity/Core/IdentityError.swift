/// Why a use case refused: the domain's own errors, without HTTP. The server maps each code to a
/// status and a public code in one place.
package struct IdentityError: Error, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable, Equatable, CaseIterable {
        /// The process was started without the settings the operation needs.
        case notConfigured
        /// The web flow needs a Services ID, which is not configured.
        case webSignInNotConfigured
        /// The app's `user` is not the subject of the verified identity token.
        case userMismatch
        /// The nonce of this sign-in was already used.
        case nonceReused
        /// Apple refused the authorization code (expired, used, or for another client).
        case codeRefused
        /// The authorization code was issued with another identity token (another `sub` or `aud`).
        case codeMismatch
        /// The `redirect_uri` a Services ID's code would be exchanged with is missing, not
        /// registered for it, or sent with a bundle id's credential.
        case redirectURIRefused
        /// A native app's token request lacks a parameter or has a malformed one.
        case appTokenRequestInvalid
        /// A native app's token request names a client that is not registered.
        case appClientUnknown
        /// A native app's code is unknown, spent, expired, another client's, for another redirect
        /// URI, or its verifier does not match.
        case appCodeRefused
        /// Apple could not be reached, or answered what it never answers.
        case appleUnavailable
        /// Apple refused our own credentials (client secret, client id).
        case appleRefusedCredentials
        /// The refresh token is not one of ours.
        case refreshTokenUnknown
        /// The session behind a token or cookie was revoked, expired, or deleted with its account.
        case sessionEnded
        /// A spent refresh token was presented again; its session has been revoked.
        case refreshTokenReused
        /// The access token is not valid; `reason` says why.
        case accessTokenRefused
        /// The signed-in account no longer exists.
        case accountGone
        /// No such account, or no such session of the caller.
        case notFound
        /// The web sign-in was already completed.
        case alreadyCompleted
        /// An operator disabled the user: no sign-in until they enable them again.
        case userDisabled
        /// The caller exported their data too often lately; `reason` holds the seconds to wait.
        case exportLimited
        /// The Apple ID already belongs to another user; nothing was merged.
        case identityInUse
        /// The external id's user already has a different Apple ID.
        case externalUserLinked
        /// The guest whose session came with the sign-in already has a different Apple ID.
        case guestLinked
        /// No such link token.
        case linkTokenUnknown
        /// The link token's time is up.
        case linkTokenExpired
        /// The link token was used already.
        case linkTokenUsed
        /// Guest accounts are turned off on this server.
        case guestsDisabled
        /// Linking is not set up (no link secret), or the secret presented is not one of them.
        case linkingRefused
        /// The database could not be reached, or did not answer within the request's time.
        case databaseUnavailable
        /// A sync would take a declared collection past its records per user; `reason` names it.
        case syncLimitExceeded
    }

    package let code: Code
    /// What exactly was wrong, safe to show the client (no token, no secret).
    package let reason: String

    package init(_ code: Code, _ reason: String = "") {
        self.code = code
        self.reason = reason
    }

    package var description: String { reason.isEmpty ? code.rawValue : "\(code.rawValue): \(reason)" }

    /// Compares codes only, so that tests can expect `IdentityError(.nonceReused)`.
    package static func == (lhs: IdentityError, rhs: IdentityError) -> Bool { lhs.code == rhs.code }
}
