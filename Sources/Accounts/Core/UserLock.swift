package import MariaDB

/// The lock that orders a user's concurrent changes: their `users` row, held until the
/// transaction ends.
package enum UserLock {
    /// Locks the user's row until the transaction ends.
    /// - Returns: false when there is no such user (deleted).
    package static func lock(_ userID: UInt64, on connection: Connection) throws -> Bool {
        try connection.query("SELECT id FROM users WHERE id = ? FOR UPDATE", userID).first != nil
    }
}
