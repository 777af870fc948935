package import AccountData
package import MariaDB

extension Profile {
    /// The user `userID`, or nil when there is none (deleted).
    package static func load(userID: UInt64, on connection: Connection) throws -> Profile? {
        guard
            let user = try connection.query(
                """
                SELECT first_name, last_name, \(UnixTime.seconds("created_at")) AS created, external_id,
                    guest_since IS NOT NULL AS is_guest
                FROM users WHERE id = ?
                """, userID
            ).first
        else { return nil }
        let emails = try connection.query(
            "SELECT address, is_private_relay, forwarding_enabled, verified FROM user_emails WHERE user_id = ? ORDER BY id LIMIT 100",
            userID
        ).map { row in
            Email(
                address: try row.decode(column: "address"), isPrivateRelay: try row.decode(column: "is_private_relay"),
                forwardingEnabled: try row.decode(column: "forwarding_enabled"), verified: try row.decode(column: "verified"))
        }
        return Profile(
            userID: userID, firstName: try user.decode(column: "first_name"), lastName: try user.decode(column: "last_name"),
            createdAt: try user.decode(column: "created"), emails: emails, externalID: try user.decode(column: "external_id"),
            isGuest: try user.decode(column: "is_guest"))
    }
}
