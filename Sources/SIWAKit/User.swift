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
