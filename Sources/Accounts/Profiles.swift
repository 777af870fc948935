package import MariaDB

/// A user as `GET /auth/me` shows them.
package struct Profile: Sendable, Equatable {
    package struct Email: Sendable, Equatable {
        package var address: String
        package var isPrivateRelay: Bool
        package var forwardingEnabled: Bool
        package var verified: Bool
    }

    package var userID: UInt64
    package var firstName: String?
    package var lastName: String?
    /// Unix seconds.
    package var createdAt: Int64
    package var emails: [Email]

    /// The user `userID`, or nil when there is none (deleted).
    package static func load(userID: UInt64, on connection: Connection) throws -> Profile? {
        guard
            let user = try connection.query(
                "SELECT first_name, last_name, CAST(UNIX_TIMESTAMP(created_at) AS SIGNED) FROM users WHERE id = ?", userID
            ).first
        else { return nil }
        let emails = try connection.query(
            "SELECT address, is_private_relay, forwarding_enabled, verified FROM user_emails WHERE user_id = ? ORDER BY id LIMIT 100",
            userID
        ).map { row in
            Email(
                address: try row.decode(at: 0), isPrivateRelay: try row.decode(at: 1), forwardingEnabled: try row.decode(at: 2),
                verified: try row.decode(at: 3))
        }
        return Profile(
            userID: userID, firstName: try user.decode(at: 0), lastName: try user.decode(at: 1), createdAt: try user.decode(at: 2),
            emails: emails)
    }
}

/// Deleting an account: the user and everything that belongs to them, in one transaction, with
/// the Apple refresh tokens moved to the revocation outbox (DESIGN.md rule 9).
package enum AccountDeletion {
    /// Deletes `userID` (sessions, tokens, identities, emails and the rest go with it through
    /// foreign keys) and, when `revokeAtApple`, queues a revocation at Apple for each stored Apple
    /// refresh token, with the client id that minted it. Must run inside a transaction.
    /// - Parameter source: why (`user`, `apple_notification`), for the audit event.
    /// - Returns: false when there was no such user.
    package static func delete(
        userID: UInt64, revokeAtApple: Bool = true, source: String = "user", remoteAddress: String?, on connection: Connection
    ) throws -> Bool {
        guard !(try connection.query("SELECT id FROM users WHERE id = ? FOR UPDATE", userID).isEmpty) else { return false }
        let queued = !revokeAtApple ? 0 : try connection.execute(
            """
            INSERT INTO apple_revocations (client_id, token, token_key_id, token_type_hint)
            SELECT apple_refresh_token_client_id, apple_refresh_token, apple_refresh_token_key_id, 'refresh_token'
            FROM apple_identities
            WHERE user_id = ? AND apple_refresh_token IS NOT NULL AND apple_refresh_token_client_id IS NOT NULL
                AND apple_refresh_token_key_id IS NOT NULL
            """, userID
        ).affectedRows
        _ = try connection.execute("DELETE FROM users WHERE id = ?", userID)
        try AuditLog.record(
            "account_deleted", userID: userID, remoteAddress: remoteAddress,
            detail: #"{"source":"\#(source)","appleRevocationsQueued":\#(queued)}"#, on: connection)
        return true
    }

    /// Anonymises `userID` instead of deleting the row (for apps that keep other rows pointing at
    /// it): names, emails, Apple identities, web sign-ins go; every session ends. A later sign-in
    /// with the same Apple account creates a new user. Must run inside a transaction.
    /// - Returns: false when there was no such user.
    package static func anonymise(userID: UInt64, source: String, on connection: Connection) throws -> Bool {
        guard !(try connection.query("SELECT id FROM users WHERE id = ? FOR UPDATE", userID).isEmpty) else { return false }
        _ = try connection.execute("UPDATE users SET first_name = NULL, last_name = NULL, updated_at = UTC_TIMESTAMP(3) WHERE id = ?", userID)
        _ = try connection.execute("DELETE FROM user_emails WHERE user_id = ?", userID)
        _ = try connection.execute("DELETE FROM apple_identities WHERE user_id = ?", userID)
        _ = try connection.execute("DELETE FROM web_sign_ins WHERE user_id = ?", userID)
        _ = try Sessions.revokeAll(of: userID, reason: "account_anonymised", on: connection)
        try AuditLog.record("account_anonymised", userID: userID, detail: #"{"source":"\#(source)"}"#, on: connection)
        return true
    }
}
