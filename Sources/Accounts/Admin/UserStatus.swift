package import MariaDB

/// A sign-in, or a session about to be opened, of a user an operator disabled.
package struct AccountDisabled: Error, Equatable {
    package let userID: UInt64
}

/// Operators disable and enable users (`siwa admin disable`). A disabled user has no active
/// session and cannot open one (`Sessions.create` refuses); nothing of theirs is deleted.
package enum UserStatus {
    /// The longest reason kept.
    package static let maximumReasonLength = 255

    /// Disables `userID` and ends every session of theirs. Must run inside a transaction: the
    /// user's row stays locked until it commits, so a sign-in opening a session at the same moment
    /// either commits first (and its session is ended here) or sees the user disabled.
    /// - Returns: the ids of the sessions that ended; nil when there is no such user.
    package static func disable(_ userID: UInt64, reason: String?, on connection: Connection) throws -> [UInt64]? {
        guard try UserLock.lock(userID, on: connection) else { return nil }
        _ = try connection.execute(
            """
            UPDATE users SET disabled_at = COALESCE(disabled_at, UTC_TIMESTAMP(3)), disabled_reason = ?, updated_at = UTC_TIMESTAMP(3)
            WHERE id = ?
            """, reason.map { ColumnText.fitted($0, maximum: maximumReasonLength) }, userID)
        return try Sessions.revokeAll(of: userID, reason: "user_disabled", on: connection)
    }

    /// Enables `userID` again: they can sign in (their ended sessions stay ended).
    /// - Returns: false when there is no such user.
    package static func enable(_ userID: UInt64, on connection: Connection) throws -> Bool {
        guard try UserLock.lock(userID, on: connection) else { return false }
        _ = try connection.execute(
            "UPDATE users SET disabled_at = NULL, disabled_reason = NULL, updated_at = UTC_TIMESTAMP(3) WHERE id = ?", userID)
        return true
    }
}
