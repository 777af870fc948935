package import MariaDB

/// Nonces accepted once across every worker and host: the SHA-256 of each accepted nonce is
/// recorded in `used_nonces` until the token it came with has expired (docs/SECURITY.md rule 1).
package enum Nonces {
    /// Records `hash` (the SHA-256 of a raw nonce), accepted once. In a transaction the record is
    /// sent with the transaction's next statement (one round trip less per sign-in), and that
    /// statement throws the refusal that `isReuse` recognises when the nonce was already used;
    /// outside one it is written at once and throws it at once.
    /// - Parameter expiresAt: when the record may go (the token's `exp` plus leeway), in Unix seconds.
    package static func claim(hash: [UInt8], expiresAt: Int64, on connection: Connection) throws {
        precondition(hash.count == 32, "a SHA-256 hash")
        // A duplicate key updates the row to itself, which counts as no change.
        try connection.executeWithNext(
            """
            INSERT INTO used_nonces (nonce_hash, expires_at) VALUES (?, TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ? SECOND)
            ON DUPLICATE KEY UPDATE nonce_hash = nonce_hash
            """, binds: [hash, expiresAt], refusingNoChange: reuseRefusal)
    }

    /// Whether `error` is `claim`'s refusal of a nonce that was already used.
    package static func isReuse(_ error: any Error) -> Bool {
        guard let error = error as? MariaDBError else { return false }
        return error.code == .refused && error.message == reuseRefusal
    }

    private static let reuseRefusal = "used_nonces: this nonce was already used"

    /// Deletes the records of nonces whose tokens have expired; returns how many.
    package static func purgeExpired(on connection: Connection) throws -> UInt64 {
        try connection.execute("DELETE FROM used_nonces WHERE expires_at < UTC_TIMESTAMP(3) LIMIT 10000").affectedRows
    }
}
