package import MariaDB

/// The log of session revocations that every siwa process polls (`SessionCache` in `Identity`):
/// written in the transaction that ends the session, read for the last `window` seconds.
package enum SessionRevocations {
    /// Seconds the poll looks back: every poll in this time after a revocation sees it again, so a
    /// process that remembered the session just before the revocation committed forgets it.
    package static let window = 10

    /// Logs that `sessionID` of `userID` ended, or every session of the user when nil. Must run
    /// inside the transaction that ends them.
    package static func record(userID: UInt64, sessionID: UInt64?, on connection: Connection) throws {
        _ = try connection.execute("INSERT INTO session_revocations (user_id, session_id) VALUES (?, ?)", userID, sessionID)
    }

    /// The revocations of the last `window` seconds: user and session (nil: all of the user's).
    package static func recent(on connection: Connection) throws -> [(userID: UInt64, sessionID: UInt64?)] {
        try connection.query(
            "SELECT user_id, session_id FROM session_revocations WHERE revoked_at >= UTC_TIMESTAMP(3) - INTERVAL ? SECOND", window
        ).map { (try $0.decode(column: "user_id"), try $0.decode(column: "session_id")) }
    }
}
