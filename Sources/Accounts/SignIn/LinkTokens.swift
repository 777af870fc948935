package import MariaDB

/// Link tokens: single-use, short-lived tokens the app's older backend mints for one of its user
/// ids, which the app presents with a sign-in to attach the Apple identity to that user. Only
/// their SHA-256 is stored.
package enum LinkTokens {
    /// The longest external id accepted.
    package static let maximumExternalIDLength = 255

    /// Why a link token was refused.
    package enum Refusal: Error, Sendable, Equatable {
        case unknown
        case expired
        case used
    }

    /// Stores a new link token's hash for `externalID`, valid `lifetime` seconds.
    package static func mint(hash: [UInt8], externalID: String, lifetime: Int, on connection: Connection) throws {
        _ = try connection.execute(
            "INSERT INTO link_tokens (token_hash, external_id, expires_at) VALUES (?, ?, UTC_TIMESTAMP(3) + INTERVAL ? SECOND)", hash,
            externalID, lifetime)
    }

    /// The external id of the usable link token `hash`, without using it up.
    /// - Throws: `Refusal`.
    package static func check(hash: [UInt8], on connection: Connection) throws -> String {
        guard
            let row = try connection.query(
                """
                SELECT external_id, used_at IS NOT NULL AS used, expires_at <= UTC_TIMESTAMP(3) AS expired
                FROM link_tokens WHERE token_hash = ?
                """, hash
            ).first
        else { throw Refusal.unknown }
        if try row.decode(column: "used") as Bool { throw Refusal.used }
        if try row.decode(column: "expired") as Bool { throw Refusal.expired }
        return try row.decode(column: "external_id")
    }

    /// Uses up the link token `hash` for `userID`. Must run inside the transaction of the sign-in
    /// it links, so that a refused sign-in leaves it usable.
    /// - Returns: its external id.
    /// - Throws: `Refusal` when it is unknown, expired or used (by a concurrent sign-in too).
    package static func use(hash: [UInt8], on connection: Connection) throws -> String {
        let externalID = try check(hash: hash, on: connection)
        let used = try connection.execute(
            "UPDATE link_tokens SET used_at = UTC_TIMESTAMP(3) WHERE token_hash = ? AND used_at IS NULL AND expires_at > UTC_TIMESTAMP(3)",
            hash)
        guard used.affectedRows == 1 else { throw Refusal.used }
        return externalID
    }

    /// Records the user a used link token linked.
    package static func recordUser(_ userID: UInt64, hash: [UInt8], on connection: Connection) throws {
        _ = try connection.execute("UPDATE link_tokens SET used_by_user_id = ? WHERE token_hash = ?", userID, hash)
    }
}
