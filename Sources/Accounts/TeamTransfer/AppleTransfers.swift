package import AccountData
package import MariaDB

/// The records of a team transfer (`apple_transfers`): on the sending side, the `transfer_sub`
/// Apple mints for each identity; on the receiving side, the new team's identity each one resolves
/// to. Each row says what is done, so every step can be run again and does only what is left.
package enum AppleTransfers {
    /// An identity of the sending team, and its transfer record so far.
    package struct Identity: Sendable, Equatable {
        package var identityID: UInt64
        package var userID: UInt64
        package var sub: String
        /// The `transfer_sub` minted for it; nil until then.
        package var transferSub: String?
    }

    /// Where a `transfer_sub` comes from: the sending team's identity and its user.
    package struct Origin: Sendable, Equatable {
        package var identityID: UInt64
        package var userID: UInt64

        package init(identityID: UInt64, userID: UInt64) {
            self.identityID = identityID
            self.userID = userID
        }
    }

    /// Counts of one transfer's records.
    package typealias Progress = TransferProgress

    /// The longest error text kept.
    static let maximumErrorLength = 255

    /// Up to `limit` identities of `teamID` after `afterID` without a `transfer_sub` for `target`,
    /// in id order (a run pages through them, so a refused one is not picked up again).
    package static func unminted(teamID: String, target: String, after afterID: UInt64, limit: Int, on connection: Connection) throws
        -> [Identity]
    {
        try connection.query(
            """
            SELECT i.id, i.user_id, i.sub FROM apple_identities i
            LEFT JOIN apple_transfers t ON t.identity_id = i.id AND t.target_team_id = ? AND t.transfer_sub IS NOT NULL
            WHERE i.team_id = ? AND i.id > ? AND t.identity_id IS NULL ORDER BY i.id LIMIT ?
            """, target, teamID, afterID, limit
        ).map {
            Identity(
                identityID: try $0.decode(column: "id"), userID: try $0.decode(column: "user_id"), sub: try $0.decode(column: "sub"),
                transferSub: nil)
        }
    }

    /// Records the `transfer_sub` Apple minted for `identityID` and `target`.
    package static func recordMinted(_ identityID: UInt64, target: String, transferSub: String, on connection: Connection) throws {
        _ = try connection.execute(
            """
            INSERT INTO apple_transfers (identity_id, target_team_id, transfer_sub, minted_at) VALUES (?, ?, ?, UTC_TIMESTAMP(3))
            ON DUPLICATE KEY UPDATE target_team_id = VALUES(target_team_id), transfer_sub = VALUES(transfer_sub),
                minted_at = VALUES(minted_at), resolved_identity_id = NULL, resolved_at = NULL, last_error = NULL,
                updated_at = UTC_TIMESTAMP(3)
            """, identityID, target, transferSub)
    }

    /// Records that Apple refused a call for `identityID` (minting or resolving), with its error.
    package static func recordFailure(_ identityID: UInt64, target: String, error: String, on connection: Connection) throws {
        _ = try connection.execute(
            """
            INSERT INTO apple_transfers (identity_id, target_team_id, failures, last_error) VALUES (?, ?, 1, ?)
            ON DUPLICATE KEY UPDATE failures = failures + 1, last_error = VALUES(last_error), updated_at = UTC_TIMESTAMP(3)
            """, identityID, target, ColumnText.fitted(error, maximum: maximumErrorLength))
    }

    /// Up to `limit` minted records for `teamID` (the receiving team) after `afterID` that are
    /// not resolved yet, in id order.
    package static func unresolved(teamID: String, after afterID: UInt64, limit: Int, on connection: Connection) throws -> [Identity] {
        try connection.query(
            """
            SELECT t.identity_id, i.user_id, i.sub, t.transfer_sub FROM apple_transfers t JOIN apple_identities i ON i.id = t.identity_id
            WHERE t.target_team_id = ? AND t.transfer_sub IS NOT NULL AND t.resolved_at IS NULL AND t.identity_id > ?
            ORDER BY t.identity_id LIMIT ?
            """, teamID, afterID, limit
        ).map {
            Identity(
                identityID: try $0.decode(column: "identity_id"), userID: try $0.decode(column: "user_id"),
                sub: try $0.decode(column: "sub"),
                transferSub: try $0.decode(column: "transfer_sub"))
        }
    }

    /// The sending team's identity that `transferSub` was minted for, when it was minted for
    /// `receivingTeam`.
    package static func origin(of transferSub: String, receivingTeam: String, on connection: Connection) throws -> Origin? {
        try connection.query(
            """
            SELECT t.identity_id, i.user_id FROM apple_transfers t JOIN apple_identities i ON i.id = t.identity_id
            WHERE t.transfer_sub = ? AND t.target_team_id = ?
            """, transferSub, receivingTeam
        ).first.map { Origin(identityID: try $0.decode(column: "identity_id"), userID: try $0.decode(column: "user_id")) }
    }

    /// Records that the sending team's `identityID` now continues as `newIdentityID`.
    package static func markResolved(_ identityID: UInt64, to newIdentityID: UInt64, on connection: Connection) throws {
        _ = try connection.execute(
            """
            UPDATE apple_transfers SET resolved_identity_id = ?, resolved_at = COALESCE(resolved_at, UTC_TIMESTAMP(3)), last_error = NULL,
                updated_at = UTC_TIMESTAMP(3)
            WHERE identity_id = ?
            """, newIdentityID, identityID)
    }

    /// What resolving a `transfer_sub` did.
    package enum Resolution: Sendable, Equatable {
        /// The new identity was attached to the user.
        case attached(identityID: UInt64)
        /// The new identity was already the user's (a sign-in with the `transfer_sub` came first).
        case alreadyAttached(identityID: UInt64)
        /// The new identity belongs to another user (they signed in as someone new before the
        /// transfer was resolved); nothing is merged.
        case conflict(otherUserID: UInt64)
    }

    /// Attaches the receiving team's `sub` to the user of `origin`, with `audience` as the client
    /// id it signed in with, and records the resolution; stores the email Apple gave with it (a
    /// relay address of the new team, when the person hides theirs). Must run inside a transaction.
    package static func resolve(
        _ origin: Origin, teamID: String, sub: String, audience: String, email: String?, isPrivateEmail: Bool,
        on connection: Connection
    ) throws -> Resolution {
        if let row = try connection.query("SELECT id, user_id FROM apple_identities WHERE team_id = ? AND sub = ?", teamID, sub).first {
            let identityID: UInt64 = try row.decode(column: "id")
            let owner: UInt64 = try row.decode(column: "user_id")
            guard owner == origin.userID else { return .conflict(otherUserID: owner) }
            try markResolved(origin.identityID, to: identityID, on: connection)
            return .alreadyAttached(identityID: identityID)
        }
        let identityID = try connection.execute(
            "INSERT INTO apple_identities (user_id, team_id, sub, audience) VALUES (?, ?, ?, ?)", origin.userID, teamID, sub, audience
        ).lastInsertID
        try markResolved(origin.identityID, to: identityID, on: connection)
        // Apple vouches for the address it hands the receiving team.
        _ = try AppleAccounts.storeEmail(email, isPrivateRelay: isPrivateEmail, verified: true, of: origin.userID, on: connection)
        return .attached(identityID: identityID)
    }

    /// The counts of the transfer from `sendingTeam` to `receivingTeam`.
    package static func progress(sendingTeam: String, receivingTeam: String, on connection: Connection) throws -> Progress {
        guard
            let row = try connection.query(
                """
                SELECT COUNT(*) AS identities, COUNT(t.transfer_sub) AS minted, COUNT(t.resolved_at) AS resolved,
                    COUNT(CASE WHEN t.last_error IS NOT NULL THEN 1 END) AS failing
                FROM apple_identities i LEFT JOIN apple_transfers t ON t.identity_id = i.id AND t.target_team_id = ?
                WHERE i.team_id = ?
                """, receivingTeam, sendingTeam
            ).first
        else { return Progress() }
        var progress = Progress()
        progress.identities = try row.decode(column: "identities")
        progress.minted = try row.decode(column: "minted")
        progress.resolved = try row.decode(column: "resolved")
        progress.failing = try row.decode(column: "failing")
        return progress
    }

    /// The counts of every transfer to `receivingTeam`, whichever team sent it.
    package static func progress(receivingTeam: String, on connection: Connection) throws -> Progress {
        var total = Progress()
        for sending in try sendingTeams(of: receivingTeam, on: connection) {
            let part = try progress(sendingTeam: sending, receivingTeam: receivingTeam, on: connection)
            total.identities += part.identities
            total.minted += part.minted
            total.resolved += part.resolved
            total.failing += part.failing
        }
        return total
    }

    /// The sending teams of the transfers to `receivingTeam`.
    package static func sendingTeams(of receivingTeam: String, on connection: Connection) throws -> [String] {
        try connection.query(
            """
            SELECT DISTINCT i.team_id FROM apple_transfers t JOIN apple_identities i ON i.id = t.identity_id
            WHERE t.target_team_id = ? ORDER BY i.team_id
            """, receivingTeam
        ).map { try $0.decode(column: "team_id") }
    }
}
