package import MariaDB

/// A revocation waiting in the outbox.
package struct PendingRevocation: Sendable, Equatable {
    package var id: UInt64
    package var token: SealedAppleToken
    package var tokenTypeHint: String
    package var attempts: Int

    package init(id: UInt64, token: SealedAppleToken, tokenTypeHint: String, attempts: Int) {
        self.id = id
        self.token = token
        self.tokenTypeHint = tokenTypeHint
        self.attempts = attempts
    }
}

/// The durable outbox of revocations to send to Apple: written in the account-deletion
/// transaction, sent by `siwa jobs`, retried with the delays its caller computes until Apple
/// answers 200.
package enum AppleRevocationOutbox {
    /// Queues the revocation of a refresh token siwa obtained from Apple and does not keep (a code
    /// of another sign-in, a sign-in refused after the exchange), in a statement of its own, so
    /// that no token of ours stays valid at Apple unseen.
    package static func queue(_ token: SealedAppleToken, on connection: Connection) throws {
        _ = try connection.execute(
            "INSERT INTO apple_revocations (client_id, token, token_key_id, token_type_hint) VALUES (?, ?, ?, 'refresh_token')",
            token.clientID, token.ciphertext, token.keyID)
    }

    /// Claims up to `limit` due revocations: each gets its next attempt time pushed back first, so
    /// a crashed sender retries later and two senders never claim the same row.
    /// - Parameter retryDelay: the seconds to push a row back by, given the number (from 1) of the
    ///   attempt it is claimed for.
    package static func claimDue(limit: Int, retryDelay: (_ attempt: Int) -> Int, on connection: Connection) throws
        -> [PendingRevocation]
    {
        let due = try connection.query(
            """
            SELECT id, client_id, token, token_key_id, token_type_hint, attempts FROM apple_revocations
            WHERE done_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(3) ORDER BY next_attempt_at LIMIT ?
            """, limit)
        var claimed: [PendingRevocation] = []
        for row in due {
            let id: UInt64 = try row.decode(column: "id")
            let attempts: Int = try row.decode(column: "attempts")
            let won =
                try connection.execute(
                    """
                    UPDATE apple_revocations
                    SET next_attempt_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND, attempts = attempts + 1
                    WHERE id = ? AND done_at IS NULL AND next_attempt_at <= UTC_TIMESTAMP(3) AND attempts = ?
                    """, retryDelay(attempts + 1), id, attempts
                ).affectedRows == 1
            guard won else { continue }
            claimed.append(
                PendingRevocation(
                    id: id,
                    token: SealedAppleToken(
                        ciphertext: try row.decode(column: "token"), keyID: try row.decode(column: "token_key_id"),
                        clientID: try row.decode(column: "client_id")),
                    tokenTypeHint: try row.decode(column: "token_type_hint"), attempts: attempts + 1))
        }
        return claimed
    }

    /// Apple answered 200: done (the encrypted token is erased).
    package static func markDone(_ id: UInt64, on connection: Connection) throws {
        _ = try connection.execute(
            "UPDATE apple_revocations SET done_at = UTC_TIMESTAMP(3), token = '', last_error = NULL WHERE id = ?", id)
    }

    /// The attempt failed; it is retried at the time set when it was claimed.
    /// - Parameter error: a description without secrets.
    package static func markFailed(_ id: UInt64, error: String, on connection: Connection) throws {
        _ = try connection.execute("UPDATE apple_revocations SET last_error = ? WHERE id = ?", ColumnText.fitted(error, maximum: 255), id)
    }
}
