/// Apple's answer to `ASAuthorizationAppleIDProvider.getCredentialState(forUserID:)`.
public enum AppleCredentialState: Sendable, Equatable {
    /// The credential is valid: the person still uses Sign in with Apple with the app.
    case authorized
    /// The person stopped using Sign in with Apple with the app.
    case revoked
    /// Apple knows no credential of this user id for the app.
    case notFound
    /// The app moved to another developer team: the kept Apple user id is the old team's. The
    /// server's session goes on; signing in with Apple again gets the new team's id, and the
    /// server matches its `transfer_sub` to the same account.
    case transferred
}

/// What `SIWAClient.handleCredentialState` did.
public enum CredentialStateOutcome: Sendable, Equatable {
    /// Nothing to do: authorized, or nobody signed in.
    case unchanged
    /// Revoked or not found: signed out on the server and on the device.
    case signedOut
    /// The app was transferred to another team: still signed in; sign in with Apple again when
    /// convenient to get the new team's user id (the server keeps the same account).
    case transferred
}

#if canImport(AuthenticationServices)
    public import AuthenticationServices

    extension AppleCredentialState {
        /// The state Apple reported; a state this version of `SIWAKit` does not know counts as
        /// `authorized`, so that it never signs anyone out.
        /// - Parameter state: what `getCredentialState(forUserID:)` answered.
        public init(_ state: ASAuthorizationAppleIDProvider.CredentialState) {
            switch state {
            case .authorized: self = .authorized
            case .revoked: self = .revoked
            case .transferred: self = .transferred
            case .notFound: self = .notFound
            @unknown default: self = .authorized
            }
        }
    }
#endif
