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

    /// Where a sweep of the guests stands: after the guest who became one at `since` (Unix
    /// milliseconds) with the id `userID`, in the order of the guests' index (`users_guests`).
    package struct Position: Sendable, Equatable {
        package var since: Int64
        package var userID: UInt64

        package init(since: Int64, userID: UInt64) {
            self.since = since
            self.userID = userID
        }

        /// Before every guest.
        package static let start = Position(since: 0, userID: 0)
    }

    /// A guest past the retention days, as `past(retentionDays:after:limit:on:)` reads them.
    package struct Candidate: Sendable, Equatable {
        package var userID: UInt64
        /// Where a sweep stands once past this guest.
        package var position: Position
        /// No session of the guest was used within the days (or they have none): `purge` may delete them.
        package var unused: Bool
    }

    /// The next `limit` guests after `position` who became guests more than `days` days ago, in
    /// the order of their index, each with whether a session of theirs was used within the days.
    /// It reads `limit` entries of the index and one user's sessions for each, however many of
    /// the older guests still use the app: a statement that looked for unused guests among all of
    /// them read every one on every pass.
    package static func past(retentionDays days: Int, after position: Position, limit: Int, on connection: Connection) throws
        -> [Candidate]
    {
        try connection.query(
            """
            SELECT g.id, g.since, NOT EXISTS (
                    SELECT 1 FROM sessions s WHERE s.user_id = g.id AND s.last_used_at >= UTC_TIMESTAMP(3) - INTERVAL ? DAY) AS unused
            FROM (
                SELECT u.id, u.guest_since, \(UnixTime.milliseconds("u.guest_since")) AS since FROM users u
                WHERE u.guest_since < UTC_TIMESTAMP(3) - INTERVAL ? DAY
                    AND (u.guest_since > FROM_UNIXTIME(? / 1000) OR (u.guest_since = FROM_UNIXTIME(? / 1000) AND u.id > ?))
                ORDER BY u.guest_since, u.id LIMIT ?
            ) g
            ORDER BY g.guest_since, g.id
            """, days, days, position.since, position.since, position.userID, limit
        ).map { row in
            let userID: UInt64 = try row.decode(column: "id")
            return Candidate(
                userID: userID, position: Position(since: try row.decode(column: "since"), userID: userID),
                unused: try row.decode(column: "unused"))
        }
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
