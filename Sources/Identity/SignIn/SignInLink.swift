import Accounts

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
