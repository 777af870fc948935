import JOSE
package import MariaDB
import StrictJSON

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

/// An Apple refresh token due for its daily check at Apple, with the identity it belongs to.
package struct DueValidation: Sendable, Equatable {
    package var identityID: UInt64
    package var userID: UInt64
    /// The token, with the client id that minted it.
    package var token: SealedAppleToken
}

/// The daily re-validation of each stored Apple refresh token (Apple's guidance: at most once a day),
/// with the client id that minted it. A person holds one token per client id (the app's bundle id,
/// the web's Services ID); `invalid_grant` for one of them ends the sessions opened with that
/// client id.
package enum AppleValidations {
    /// Claims up to `limit` tokens of `teamID`'s identities whose check is due, pushing their next
    /// check back by `lease` seconds first so that no other sender takes them (and a check that
    /// could not reach Apple is tried again then). Tokens of another team's identities (kept after
    /// a team transfer) are never checked: this server's credentials are not that team's, and a
    /// refusal would end sessions the transfer kept.
    package static func claimDue(teamID: String, limit: Int, lease: Int, on connection: Connection) throws -> [DueValidation] {
        let due = try connection.query(
            """
            SELECT t.identity_id, i.user_id, t.client_id, t.token, t.token_key_id
            FROM apple_tokens t JOIN apple_identities i ON i.id = t.identity_id
            WHERE t.next_validation_at <= UTC_TIMESTAMP(3) AND i.consent_state = 'active' AND i.team_id = ?
            ORDER BY t.next_validation_at LIMIT ?
            """, teamID, limit)
        var claimed: [DueValidation] = []
        for row in due {
            let validation = DueValidation(
                identityID: try row.decode(column: "identity_id"), userID: try row.decode(column: "user_id"),
                token: SealedAppleToken(
                    ciphertext: try row.decode(column: "token"), keyID: try row.decode(column: "token_key_id"),
                    clientID: try row.decode(column: "client_id")))
            let won =
                try connection.execute(
                    """
                    UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
                    WHERE identity_id = ? AND client_id = ? AND next_validation_at <= UTC_TIMESTAMP(3)
                    """, lease, validation.identityID, validation.token.clientID
                ).affectedRows == 1
            if won { claimed.append(validation) }
        }
        return claimed
    }

    /// Apple accepted the refresh token: the next check is `nextCheckIn` seconds from now.
    package static func markValid(_ validation: DueValidation, nextCheckIn: Int, on connection: Connection) throws {
        _ = try connection.execute(
            """
            UPDATE apple_tokens SET last_validated_at = UTC_TIMESTAMP(3), next_validation_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
            WHERE identity_id = ? AND client_id = ?
            """, nextCheckIn, validation.identityID, validation.token.clientID)
    }

    /// Apple answered `invalid_grant` for one token: it is erased, and the sessions opened with its
    /// client id (and those of unknown origin) end; the identity is marked revoked once it holds no
    /// token. Sessions of the person's other client ids go on. Must run inside a transaction.
    /// - Returns: the ids of the sessions that ended.
    package static func tokenRefused(_ validation: DueValidation, on connection: Connection) throws -> [UInt64] {
        let clientID = validation.token.clientID
        _ = try connection.execute(
            "DELETE FROM apple_tokens WHERE identity_id = ? AND client_id = ?", validation.identityID, clientID)
        _ = try connection.execute(
            """
            UPDATE apple_identities SET consent_state = 'revoked', updated_at = UTC_TIMESTAMP(3)
            WHERE id = ? AND NOT EXISTS (SELECT 1 FROM apple_tokens WHERE identity_id = ?)
            """, validation.identityID, validation.identityID)
        let ended = try Sessions.revokeAll(
            of: validation.userID, openedWith: clientID, reason: "apple_consent_revoked", on: connection)
        try AuditLog.record(
            "apple_consent_revoked", userID: validation.userID,
            detail: JSONText.object([
                ("source", .string("daily_validation")), ("clientId", .string(clientID)), ("sessionsEnded", .integer(Int64(ended.count))),
            ]), on: connection)
        return ended
    }

    /// Consent is gone for the whole app (a `consent-revoked` notification): the identity is marked
    /// revoked, every Apple token of it erased, and every session of the user ends. Must run
    /// inside a transaction.
    /// - Returns: the ids of the sessions that ended.
    package static func consentRevoked(
        userID: UInt64, identityID: UInt64, source: String, on connection: Connection
    ) throws -> [UInt64] {
        _ = try connection.execute(
            "UPDATE apple_identities SET consent_state = 'revoked', updated_at = UTC_TIMESTAMP(3) WHERE id = ?", identityID)
        _ = try connection.execute("DELETE FROM apple_tokens WHERE identity_id = ?", identityID)
        let ended = try Sessions.revokeAll(of: userID, reason: "apple_consent_revoked", on: connection)
        try AuditLog.record(
            "apple_consent_revoked", userID: userID, detail: #"{"source":\#(AuditLog.name(source)),"sessionsEnded":\#(ended.count)}"#,
            on: connection)
        return ended
    }
}
