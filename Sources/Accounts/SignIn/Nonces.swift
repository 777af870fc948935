package import MariaDB

/// Nonces accepted once across every worker and host: the SHA-256 of each accepted nonce is
/// recorded in `used_nonces` until the token it came with has expired (docs/SECURITY.md rule 1).
package enum Nonces {
    /// Records `hash` (the SHA-256 of a raw nonce); false when it was already used.
    /// - Parameter expiresAt: when the record may go (the token's `exp` plus leeway), in Unix seconds.
    package static func consume(hash: [UInt8], expiresAt: Int64, on connection: Connection) throws -> Bool {
        precondition(hash.count == 32, "a SHA-256 hash")
        do {
            _ = try connection.execute(
                "INSERT INTO used_nonces (nonce_hash, expires_at) VALUES (?, TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ? SECOND)", hash,
                expiresAt)
            return true
        } catch let error as MariaDBError where error.code == .duplicateEntry {
            return false
        }
    }

    /// Forgets `hash`, claimed by `consume` for a sign-in whose code Apple could not take (down,
    /// slow, or siwa's own gate closed): the code was not used, so the same request may come again.
    package static func release(hash: [UInt8], on connection: Connection) throws {
        precondition(hash.count == 32, "a SHA-256 hash")
        _ = try connection.execute("DELETE FROM used_nonces WHERE nonce_hash = ?", hash)
    }

    /// Records `hash` with the transaction's next statement or its COMMIT, so that the claim costs
    /// no round trip of its own: when the nonce was already used, that statement fails with an
    /// error `isReuse` recognises, and the transaction with it. Must run inside a transaction.
    package static func consumeWithNext(hash: [UInt8], expiresAt: Int64, on connection: Connection) throws {
        precondition(hash.count == 32, "a SHA-256 hash")
        try connection.executeWithNext(
            """
            INSERT IGNORE INTO used_nonces (nonce_hash, expires_at) VALUES (?, TIMESTAMP '1970-01-01 00:00:00' + INTERVAL ? SECOND);
            IF ROW_COUNT() = 0 THEN SIGNAL SQLSTATE '\(raw: reusedState)' SET MESSAGE_TEXT = 'nonce already used'; END IF
            """, hash, expiresAt)
    }

    /// Whether `error` is the refusal of `consumeWithNext` for a nonce used before.
    package static func isReuse(_ error: MariaDBError) -> Bool { error.sqlState == reusedState }

    /// The SQLSTATE of that refusal: class 45 (an exception the statement signals), not used by MariaDB.
    private static let reusedState = "45N01"
}
