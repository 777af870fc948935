/// Whether someone is signed in on this device.
public enum AuthState: Sendable, Equatable {
    /// Nobody is signed in, and why.
    case signedOut(SignOutReason)
    /// Someone is signed in: the user as the server last answered it.
    case signedIn(User)

    /// The signed-in user; nil when signed out.
    public var user: User? {
        if case .signedIn(let user) = self { user } else { nil }
    }
}

/// Why the device is signed out.
public enum SignOutReason: Sendable, Equatable {
    /// Nobody signed in on this device yet.
    case neverSignedIn
    /// The person signed out, here.
    case signedOut
    /// The server ended the session: revoked from another device, expired, or the account is gone.
    case sessionEnded
    /// A refresh token was presented twice: the server ended the session as possibly stolen.
    case refreshTokenReused
    /// The account was deleted from this device.
    case accountDeleted
    /// Apple reports the credential revoked or unknown (the person stopped using Sign in with Apple
    /// for the app in their Apple ID settings).
    case appleCredentialRevoked
}
