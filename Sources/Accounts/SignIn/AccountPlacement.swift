import MariaDB

/// A user a sign-in is asked to put its Apple identity on, besides the identity's own user.
package enum AccountTarget: Sendable, Equatable {
    /// The guest whose session the sign-in came with: the identity is attached to them and they
    /// stop being a guest, keeping everything they synced.
    case guest(userID: UInt64)
    /// The user carrying this external id (the app's older backend's user id, from a link token),
    /// created when none does yet.
    case externalUser(id: String)
}

/// How a sign-in attached an identity to a user it did not belong to yet.
package enum AccountLink: String, Sendable, Equatable {
    case guest
    case linkToken = "link_token"
    case teamTransfer = "team_transfer"
}

/// A sign-in refused because it would put one person's identity on another's account. Nothing is
/// merged and nothing changes.
package struct AccountConflict: Error, Equatable {
    package enum Kind: Sendable, Equatable {
        /// The Apple identity already belongs to another user.
        case identityInUse
        /// The external id's user already has a different Apple identity.
        case externalUserLinked
        /// The guest is gone (deleted or purged).
        case guestGone
        /// The guest was upgraded already, with a different Apple identity.
        case guestLinked
    }

    package let kind: Kind

    package init(_ kind: Kind) { self.kind = kind }
}

/// Decides which user a signed-in identity goes to, given its current owner and the target.
struct AccountPlacement {
    /// The existing user the identity goes to; nil for a new user.
    var userID: UInt64?
    /// The external id a new user is created with.
    var externalID: String?
    var linkedBy: AccountLink?

    /// - Parameter owner: the user the identity already belongs to (directly, or through a team
    ///   transfer); nil for an identity never seen.
    static func place(owner: UInt64?, target: AccountTarget?, on connection: Connection) throws -> AccountPlacement {
        switch target {
        case nil:
            return AccountPlacement(userID: owner)
        case .guest(let guestID):
            // Locks the guest's row, so two sign-ins with the same guest session attach one identity.
            guard
                let row = try connection.query("SELECT guest_since IS NOT NULL AS is_guest FROM users WHERE id = ? FOR UPDATE", guestID)
                    .first
            else { throw AccountConflict(.guestGone) }
            // Upgraded already: with the same Apple ID, a retry whose answer was lost (an ordinary
            // sign-in); with another, refused, so that one guest never becomes two accounts.
            guard try row.decode(column: "is_guest") as Bool else {
                guard owner == guestID else { throw AccountConflict(.guestLinked) }
                return AccountPlacement(userID: owner)
            }
            if let owner, owner != guestID { throw AccountConflict(.identityInUse) }
            // The sync version moves on too: every process's cached sync state, which carries the
            // guest's byte limits, is read again.
            _ = try connection.execute(
                "UPDATE users SET guest_since = NULL, sync_version = sync_version + 1, updated_at = UTC_TIMESTAMP(3) WHERE id = ?", guestID)
            return AccountPlacement(userID: guestID, linkedBy: .guest)
        case .externalUser(let externalID):
            let holder: UInt64? = try connection.query("SELECT id FROM users WHERE external_id = ? FOR UPDATE", externalID).first?
                .decode(column: "id")
            if let owner {
                if owner == holder { return AccountPlacement(userID: owner) }
                guard holder == nil else { throw AccountConflict(.identityInUse) }
                // No user carries the external id yet: the identity's own user takes it, unless it
                // carries another one.
                let row = try connection.query("SELECT external_id FROM users WHERE id = ? FOR UPDATE", owner).first
                guard let row, try row.decode(String?.self, column: "external_id") == nil else { throw AccountConflict(.identityInUse) }
                _ = try connection.execute(
                    "UPDATE users SET external_id = ?, updated_at = UTC_TIMESTAMP(3) WHERE id = ?", externalID, owner)
                return AccountPlacement(userID: owner, linkedBy: .linkToken)
            }
            guard let holder else { return AccountPlacement(userID: nil, externalID: externalID, linkedBy: .linkToken) }
            guard try connection.query("SELECT 1 FROM apple_identities WHERE user_id = ? LIMIT 1", holder).isEmpty else {
                throw AccountConflict(.externalUserLinked)
            }
            return AccountPlacement(userID: holder, linkedBy: .linkToken)
        }
    }
}
