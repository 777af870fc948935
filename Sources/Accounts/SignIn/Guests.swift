package import MariaDB

/// Guest accounts: users without an Apple identity, made by `POST /auth/guest` so that people can
/// start before signing in. A sign-in with Apple holding a guest session attaches the identity to
/// the guest (`AccountTarget.guest`); guests nobody used for a while are purged.
package enum Guests {
    /// Creates the guest user `id` (taken from `IDBlocks`). Must run inside a transaction with their
    /// first session; the insert goes with its next statement or its COMMIT.
    /// - Returns: the user's creation time in Unix seconds, as every answer gives it.
    package static func create(id: UInt64, on connection: Connection) throws -> Int64 {
        let createdAt = UnixTime.nowMilliseconds()
        try connection.executeWithNext(
            "INSERT INTO users (id, guest_since, created_at) VALUES (?, UTC_TIMESTAMP(3), FROM_UNIXTIME(? / 1000))", id, createdAt)
        return UnixTime.seconds(milliseconds: createdAt)
    }

    /// Up to `limit` guests created more than `days` days ago whose sessions were all last used
    /// more than `days` days ago (or who have none).
    package static func unused(forDays days: Int, limit: Int, on connection: Connection) throws -> [UInt64] {
        try connection.query(
            """
            SELECT u.id FROM users u
            WHERE u.guest_since IS NOT NULL AND u.guest_since < UTC_TIMESTAMP(3) - INTERVAL ? DAY
                AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = u.id AND s.last_used_at >= UTC_TIMESTAMP(3) - INTERVAL ? DAY)
            ORDER BY u.id LIMIT ?
            """, days, days, limit
        ).map { try $0.decode(column: "id") }
    }

    /// Deletes the guest `userID` and everything theirs, if they are still a guest unused for
    /// `days` days (checked again under the row's lock, so a guest who signed in or synced since
    /// the list was read stays). Must run inside a transaction.
    /// - Returns: whether the guest was deleted.
    package static func purge(_ userID: UInt64, unusedForDays days: Int, on connection: Connection) throws -> Bool {
        let stillUnused = try connection.query(
            """
            SELECT u.id FROM users u
            WHERE u.id = ? AND u.guest_since IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = u.id AND s.last_used_at >= UTC_TIMESTAMP(3) - INTERVAL ? DAY)
            FOR UPDATE
            """, userID, days)
        guard !stillUnused.isEmpty else { return false }
        return try AccountDeletion.delete(userID: userID, revokeAtApple: false, source: "guest_expired", remoteAddress: nil, on: connection)
    }
}
