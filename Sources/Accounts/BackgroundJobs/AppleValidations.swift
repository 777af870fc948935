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
    /// Claims up to `limit` tokens of `teamID`'s identities whose check is due, oldest first, in
    /// one transaction: the rows are read with `FOR UPDATE SKIP LOCKED` (so that lanes claiming at
    /// the same time each take other rows, without waiting for each other) and their next check is
    /// pushed back by `lease` seconds in one statement, so that no other sender takes them (and a
    /// check that could not reach Apple is tried again then).
    ///
    /// Tokens of another team's identities (kept after a team transfer) are never checked: this
    /// server's credentials are not that team's, and a refusal would end sessions the transfer
    /// kept. The claim puts those it meets `park` seconds ahead, so that they do not stay due
    /// forever at the head of the queue, where every claim would read past them and the overdue
    /// age would count them.
    /// - Throws: `MariaDBError(.deadlock)` when a cluster's other node claimed a row first (the
    ///   caller retries).
    /// - Returns: the claimed tokens of `teamID`, oldest check first; fewer than `limit` when
    ///   fewer are due (or others hold them), so also fewer than read when some were another team's.
    package static func claimDue(
        teamID: String, limit: Int, lease: Int, park: Int, on connection: Connection
    ) throws -> [DueValidation] {
        // Read committed for this transaction: its locking read then takes no gap locks, so lanes
        // claiming together (each moving the rows it claims along the index) cannot deadlock.
        try connection.run("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
        return try connection.transaction {
            // The index's order, then the identity by its key: never a scan of the identities.
            let due = try connection.query(
                """
                SELECT t.identity_id, i.user_id, t.client_id, t.token, t.token_key_id,
                    (i.team_id = \(teamID) AND i.consent_state = 'active') AS checked
                FROM apple_tokens t FORCE INDEX (apple_tokens_validation) STRAIGHT_JOIN apple_identities i ON i.id = t.identity_id
                WHERE t.next_validation_at <= UTC_TIMESTAMP(3)
                ORDER BY t.next_validation_at LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """)
            var claimed: [DueValidation] = []
            var parked: [[any DatabaseValueConvertible]] = []
            for row in due {
                let validation = DueValidation(
                    identityID: try row.decode(column: "identity_id"), userID: try row.decode(column: "user_id"),
                    token: SealedAppleToken(
                        ciphertext: try row.decode(column: "token"), keyID: try row.decode(column: "token_key_id"),
                        clientID: try row.decode(column: "client_id")))
                if try row.decode(column: "checked") as Int64 == 1 {
                    claimed.append(validation)
                } else {
                    parked.append([validation.identityID, validation.token.clientID])
                }
            }
            if !claimed.isEmpty {
                let keys: [[any DatabaseValueConvertible]] = claimed.map { [$0.identityID, $0.token.clientID] }
                _ = try connection.execute(
                    """
                    UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) + INTERVAL \(lease) SECOND
                    WHERE (identity_id, client_id) IN (\(tuples: keys))
                    """)
            }
            if !parked.isEmpty {
                _ = try connection.execute(
                    """
                    UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) + INTERVAL \(park) SECOND
                    WHERE (identity_id, client_id) IN (\(tuples: parked))
                    """)
            }
            return claimed
        }
    }

    /// Sheds the oldest of a backlog that cannot be cleared: up to `limit` checks overdue by more
    /// than `bound` seconds, oldest first, each moved to its next slot, the first time of day of
    /// its current one that lies ahead (`slot` seconds apart, a day), without a call to Apple.
    /// The spread of the checks over the day is kept, so the shed ones come due again spread as
    /// they were, not at once.
    /// - Returns: how many were moved.
    package static func shedOverdue(by bound: Int, slot: Int, limit: Int, on connection: Connection) throws -> Int {
        Int(
            try connection.execute(
                """
                UPDATE apple_tokens SET next_validation_at = next_validation_at
                    + INTERVAL (FLOOR(TIMESTAMPDIFF(SECOND, next_validation_at, UTC_TIMESTAMP(3)) / \(slot)) + 1) * \(slot) SECOND
                WHERE next_validation_at < UTC_TIMESTAMP(3) - INTERVAL \(bound) SECOND
                ORDER BY next_validation_at LIMIT \(limit)
                """
            ).affectedRows)
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
