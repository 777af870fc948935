/// A change of the session on this device, as `SessionManager.events()` tells it: each one once,
/// when it happens, and nothing when nothing changed.
public enum AuthEvent: Sendable, Equatable {
    /// Someone signed in on this device (with Apple, or as a guest).
    case signedIn(User)
    /// A new access token replaced the old one; the session goes on.
    case tokenRefreshed
    /// The server answered a user that differs from the one kept (a new name or email, a guest who
    /// signed in with Apple).
    case userUpdated(User)
    /// The session ended on this device, and why.
    case signedOut(SignOutReason)
}
