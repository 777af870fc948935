package import MariaDB

/// Deleting an account: the user and everything that belongs to them, in one transaction, with
/// the Apple refresh tokens moved to the revocation outbox (docs/SECURITY.md rule 9).
package enum AccountDeletion {
    /// Deletes `userID` (sessions, tokens, identities, emails and the rest go with it through
    /// foreign keys) and, when `revokeAtApple`, queues a revocation at Apple for each stored Apple
    /// refresh token (one per client id the person signed in with), with the client id that minted
    /// it. Must run inside a transaction.
    /// - Parameter source: why (`user`, `apple_notification`), for the audit event.
    /// - Returns: false when there was no such user.
    package static func delete(
        userID: UInt64, revokeAtApple: Bool = true, source: String = "user", remoteAddress: String?, on connection: Connection
    ) throws -> Bool {
        guard try UserLock.lock(userID, on: connection) else { return false }
        let queued =
            !revokeAtApple
            ? 0
            : try connection.execute(
                """
                INSERT INTO apple_revocations (client_id, token, token_key_id, token_type_hint)
                SELECT t.client_id, t.token, t.token_key_id, 'refresh_token'
                FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id
                WHERE i.user_id = ?
                """, userID
            ).affectedRows
        _ = try connection.execute("DELETE FROM users WHERE id = ?", userID)
        try SessionRevocations.record(userID: userID, sessionID: nil, on: connection)
        try AuditLog.record(
            "account_deleted", userID: userID, remoteAddress: remoteAddress,
            detail: #"{"source":\#(AuditLog.name(source)),"appleRevocationsQueued":\#(queued)}"#, on: connection)
        return true
    }

    /// Anonymises `userID` instead of deleting the row (for apps that keep other rows pointing at
    /// it): names, emails, Apple identities, web sign-ins go; every session ends. A later sign-in
    /// with the same Apple account creates a new user. Must run inside a transaction.
    /// - Returns: false when there was no such user.
    package static func anonymise(userID: UInt64, source: String, on connection: Connection) throws -> Bool {
        guard try UserLock.lock(userID, on: connection) else { return false }
        _ = try connection.execute(
            "UPDATE users SET first_name = NULL, last_name = NULL, updated_at = UTC_TIMESTAMP(3) WHERE id = ?", userID)
        _ = try connection.execute("DELETE FROM user_emails WHERE user_id = ?", userID)
        _ = try connection.execute("DELETE FROM apple_identities WHERE user_id = ?", userID)
        _ = try connection.execute("DELETE FROM web_sign_ins WHERE user_id = ?", userID)
        _ = try Sessions.revokeAll(of: userID, reason: "account_anonymised", on: connection)
        try AuditLog.record("account_anonymised", userID: userID, detail: #"{"source":\#(AuditLog.name(source))}"#, on: connection)
        return true
    }
}
