package import MariaDB
import StrictJSON

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
