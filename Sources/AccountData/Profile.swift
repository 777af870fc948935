/// A user as `GET /auth/me` shows them.
package struct Profile: Sendable, Equatable {
    package struct Email: Sendable, Equatable {
        package var address: String
        package var isPrivateRelay: Bool
        package var forwardingEnabled: Bool
        package var verified: Bool

        package init(address: String, isPrivateRelay: Bool, forwardingEnabled: Bool, verified: Bool) {
            self.address = address
            self.isPrivateRelay = isPrivateRelay
            self.forwardingEnabled = forwardingEnabled
            self.verified = verified
        }
    }

    package var userID: UInt64
    package var firstName: String?
    package var lastName: String?
    /// Unix seconds.
    package var createdAt: Int64
    package var emails: [Email]
    /// The user's id in the app's older backend, set by a link token; nil for others.
    package var externalID: String?
    /// A guest: no Apple identity yet (`POST /auth/guest`).
    package var isGuest: Bool

    package init(
        userID: UInt64, firstName: String?, lastName: String?, createdAt: Int64, emails: [Email], externalID: String? = nil,
        isGuest: Bool = false
    ) {
        self.userID = userID
        self.firstName = firstName
        self.lastName = lastName
        self.createdAt = createdAt
        self.emails = emails
        self.externalID = externalID
        self.isGuest = isGuest
    }
}
