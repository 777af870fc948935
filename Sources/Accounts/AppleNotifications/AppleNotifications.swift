package import MariaDB

/// The ledger of Apple's server-to-server notifications and the account changes they cause
/// (docs/SECURITY.md rule 7). The caller runs `record`, the effect and `finish` in one transaction, so a
/// notification is handled exactly once or not at all.
package enum AppleNotifications {
    /// Records the notification `jti`; false when it is already recorded (a duplicate, to be
    /// acknowledged without effect). A concurrent duplicate waits for the first one's transaction.
    /// - Parameter eventTime: Unix seconds, or nil.
    package static func record(
        jti: String, type: String, subjectHash: [UInt8], audience: String, eventTime: Double?, on connection: Connection
    ) throws -> Bool {
        do {
            _ = try connection.execute(
                """
                INSERT INTO apple_notifications (jti, event_type, sub_hash, audience, event_time, outcome)
                VALUES (?, ?, ?, ?, TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ? SECOND, 'received')
                """, jti, type, subjectHash, audience, eventTime.map { Int64($0) })
            return true
        } catch let error as MariaDBError where error.code == .duplicateEntry {
            return false
        }
    }

    /// Marks the notification handled with its outcome (`processed`, `unknown_user`, ...).
    package static func finish(jti: String, outcome: String, on connection: Connection) throws {
        _ = try connection.execute(
            "UPDATE apple_notifications SET outcome = ?, processed_at = UTC_TIMESTAMP(3) WHERE jti = ?", outcome, jti)
    }

    /// The identity of (team, `sub`) and its user, locked until the transaction ends.
    package static func identity(teamID: String, subject: String, on connection: Connection) throws -> (identityID: UInt64, userID: UInt64)?
    {
        guard
            let row = try connection.query(
                "SELECT id, user_id FROM apple_identities WHERE team_id = ? AND sub = ? FOR UPDATE", teamID, subject
            ).first
        else { return nil }
        return (try row.decode(column: "id"), try row.decode(column: "user_id"))
    }

    /// Turns mail forwarding of the user's relay address `address` (or of all their relay
    /// addresses when nil) off or on.
    /// - Returns: false when the user has no such relay address (nothing changed).
    package static func setForwarding(userID: UInt64, address: String?, enabled: Bool, on connection: Connection) throws -> Bool {
        // Matched rows, not changed ones: setting what is already set still matched.
        guard
            try !connection.query(
                "SELECT 1 FROM user_emails WHERE user_id = ? AND is_private_relay = 1 AND (? IS NULL OR address = ?) FOR UPDATE",
                userID, address, address
            ).isEmpty
        else { return false }
        _ = try connection.execute(
            """
            UPDATE user_emails SET forwarding_enabled = ?, updated_at = UTC_TIMESTAMP(3)
            WHERE user_id = ? AND is_private_relay = 1 AND (? IS NULL OR address = ?)
            """, enabled, userID, address, address)
        return true
    }
}
