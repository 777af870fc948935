public import Foundation

/// The signed-in person, as the server knows them (`GET /auth/me`).
public struct User: Sendable, Equatable, Codable {
    /// The server's id of the user (not Apple's `sub`).
    public var id: String
    /// The person's given name, when known (Apple gives it on the first authorization only).
    public var firstName: String?
    /// The person's family name, when known (Apple gives it on the first authorization only).
    public var lastName: String?
    /// When the account was created.
    public var createdAt: Date
    /// The email addresses Apple gave for the person; a private relay address when they hid theirs.
    public var emails: [Email]
    /// True for a guest account (`SIWAClient.continueAsGuest`): no Apple ID yet. Absent (nil) in
    /// answers of servers before guest accounts.
    public var guest: Bool?
    /// The user's id in the app's older backend, when a link token attached the Apple ID to it.
    public var externalId: String?

    /// Whether this is a guest account, which a sign-in with Apple upgrades.
    public var isGuest: Bool { guest ?? false }

    /// An email address of the user, as Apple's identity token gave it.
    public struct Email: Sendable, Equatable, Codable {
        /// The address.
        public var address: String
        /// An address of Apple's private relay (`@privaterelay.appleid.com`).
        public var isPrivateRelay: Bool
        /// Whether Apple forwards mail to the relay address (the person can turn it off).
        public var forwardingEnabled: Bool
        /// Whether Apple said the address is verified.
        public var verified: Bool
    }
}

/// One session of the user, as `GET /auth/sessions` lists it.
public struct DeviceSession: Sendable, Equatable, Codable, Identifiable {
    /// The server's id of the session: what `SIWAClient.revokeSession(id:)` takes.
    public var id: String
    /// The device label given at sign-in.
    public var device: String?
    /// `native` (an app) or `web` (the browser sign-in).
    public var kind: String
    /// The session this client is using.
    public var current: Bool
    /// When the session began (its sign-in).
    public var createdAt: Date
    /// When the session was last used: its sign-in or its latest token refresh.
    public var lastUsedAt: Date
    /// When the session ends unless it is used before; each token refresh moves this later, up to
    /// the longest lifetime the server allows a session.
    public var expiresAt: Date
}

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

/// A session as the server grants it (`POST /auth/apple`, `POST /auth/refresh`).
struct Grant: Decodable {
    var accessToken: String
    var expiresIn: Int
    var refreshToken: String
    var sessionId: String
    /// Only in a sign-in's answer.
    var user: User?
}

/// The session kept on the device.
struct StoredSession: Codable, Equatable {
    var accessToken: String
    /// When the access token expires, by the device's clock: the time the grant was received plus
    /// `expiresIn` (the device's clock may differ from the server's).
    var accessTokenExpiresAt: Date
    var refreshToken: String
    var sessionID: String
    var user: User
    /// Apple's identifier of the person (the credential's `user`), for Apple's credential state.
    var appleUserID: String?

    init(grant: Grant, user: User, appleUserID: String?, receivedAt: Date) {
        accessToken = grant.accessToken
        accessTokenExpiresAt = receivedAt.addingTimeInterval(TimeInterval(grant.expiresIn))
        refreshToken = grant.refreshToken
        sessionID = grant.sessionId
        self.user = user
        self.appleUserID = appleUserID
    }
}

/// The JSON coders of the server's API and of what is stored: times are Unix seconds.
enum JSONCoding {
    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }

    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        return encoder
    }
}
