package import AccountData
package import MariaDB

extension Profile {
    /// The user `userID`, or nil when there is none (deleted).
    package static func load(userID: UInt64, on connection: Connection) throws -> Profile? {
        guard
            let user = try connection.query(
                """
                SELECT first_name, last_name, CAST(UNIX_TIMESTAMP(created_at) AS SIGNED), external_id, guest_since IS NOT NULL
                FROM users WHERE id = ?
                """, userID
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
            emails: emails, externalID: try user.decode(at: 3), isGuest: try user.decode(at: 4))
    }
}
