package import MariaDB

/// The server-side state of the web flow (docs/SECURITY.md rule 6): `state` and nonce kept in MariaDB,
/// bound to the browser by the SHA-256 of a cookie; then the verified result under a one-time
/// handle, redeemed once by the same browser. Secrets are stored only as SHA-256.
package enum WebSignIns {
    /// A sign-in waiting for Apple's form post.
    package struct Pending: Sendable, Equatable {
        package var id: UInt64
        package var nonce: String
        package var returnTo: String
    }

    /// A sign-in that came back from Apple, as its handle redeems it.
    package struct Completed: Sendable, Equatable {
        package var bindingHash: [UInt8]
        package var returnTo: String
        package var userID: UInt64?
        package var isNewUser: Bool
        /// Apple's `error` (such as `user_cancelled_authorize`) or our refusal code.
        package var error: String?
    }

    /// Records a new sign-in; it expires after `lifetime` seconds.
    package static func start(
        stateHash: [UInt8], bindingHash: [UInt8], nonce: String, returnTo: String, lifetime: Int, on connection: Connection
    ) throws {
        _ = try connection.execute(
            """
            INSERT INTO web_sign_ins (state_hash, binding_hash, nonce, return_to, expires_at)
            VALUES (?, ?, ?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND)
            """, stateHash, bindingHash, nonce, returnTo, lifetime)
    }

    /// The unexpired sign-in whose `state` has the SHA-256 `stateHash` and that has not come back
    /// yet, locked until the transaction ends.
    package static func pending(stateHash: [UInt8], on connection: Connection) throws -> Pending? {
        guard
            let row = try connection.query(
                """
                SELECT id, nonce, return_to FROM web_sign_ins
                WHERE state_hash = ? AND completed_at IS NULL AND expires_at > UTC_TIMESTAMP(3) FOR UPDATE
                """, stateHash
            ).first
        else { return nil }
        return Pending(
            id: try row.decode(column: "id"), nonce: try row.decode(column: "nonce"), returnTo: try row.decode(column: "return_to"))
    }

    /// Stores the outcome under the one-time handle (its SHA-256).
    package static func complete(
        _ id: UInt64, handleHash: [UInt8], userID: UInt64?, isNewUser: Bool, error: String?, on connection: Connection
    ) throws {
        _ = try connection.execute(
            """
            UPDATE web_sign_ins SET handle_hash = ?, user_id = ?, is_new_user = ?, error = ?, completed_at = UTC_TIMESTAMP(3)
            WHERE id = ? AND completed_at IS NULL
            """, handleHash, userID, isNewUser, error.map { String($0.prefix(64)) }, id)
    }

    /// Redeems a handle once: the outcome, or nil when the handle is unknown, spent or expired.
    /// Must run inside a transaction.
    package static func redeem(handleHash: [UInt8], on connection: Connection) throws -> Completed? {
        guard
            let row = try connection.query(
                """
                SELECT id, binding_hash, return_to, user_id, is_new_user, error FROM web_sign_ins
                WHERE handle_hash = ? AND consumed_at IS NULL AND completed_at IS NOT NULL AND expires_at > UTC_TIMESTAMP(3)
                FOR UPDATE
                """, handleHash
            ).first
        else { return nil }
        let id: UInt64 = try row.decode(column: "id")
        _ = try connection.execute("UPDATE web_sign_ins SET consumed_at = UTC_TIMESTAMP(3) WHERE id = ?", id)
        return Completed(
            bindingHash: try row.decode(column: "binding_hash"), returnTo: try row.decode(column: "return_to"),
            userID: try row.decode(column: "user_id"), isNewUser: try row.decode(column: "is_new_user"),
            error: try row.decode(column: "error"))
    }

    /// Deletes sign-ins that expired more than an hour ago; returns how many.
    package static func purgeExpired(on connection: Connection) throws -> UInt64 {
        try connection.execute(
            "DELETE FROM web_sign_ins WHERE expires_at < UTC_TIMESTAMP(3) - INTERVAL 1 HOUR LIMIT 10000"
        ).affectedRows
    }
}
