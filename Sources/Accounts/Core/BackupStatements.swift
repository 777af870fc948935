package import MariaDB

/// The statements of `siwa backup` and `siwa restore`: the sealed Apple refresh tokens by data
/// key (to prove that a restored data key opens them), whether the server writes a binary log,
/// the rows a restore brought back, and the target database's creation and emptiness.
package enum BackupStatements {
    /// The tables whose rows a backup and a restore count, in the order they are printed.
    package static let countedTables = [
        "users", "apple_identities", "apple_tokens", "sessions", "refresh_tokens", "sync_records", "webhook_deliveries",
        "apple_revocations",
    ]

    /// How many sealed Apple refresh tokens each data key id seals: those of the identities and
    /// those still waiting in the revocation outbox.
    package static func sealedTokenCounts(on connection: Connection) throws -> [String: Int] {
        let rows = try connection.query(
            """
            SELECT token_key_id, COUNT(*) AS sealed FROM (
                SELECT token_key_id FROM apple_tokens
                UNION ALL SELECT token_key_id FROM apple_revocations WHERE done_at IS NULL
            ) AS tokens GROUP BY token_key_id
            """)
        var counts: [String: Int] = [:]
        for row in rows { counts[try row.decode(column: "token_key_id")] = try row.decode(column: "sealed") }
        return counts
    }

    /// The sealed token under `keyID` at `position` (from 0) of a fixed order: the identities'
    /// tokens by identity and client id, then the waiting revocations by id; nil past the last.
    /// Which positions to read (`DataKeyCheck` draws them at random) is the caller's.
    package static func sealedToken(keyID: String, at position: Int, on connection: Connection) throws -> SealedAppleToken? {
        try connection.query(
            """
            SELECT client_id, token, token_key_id FROM (
                SELECT 0 AS source, identity_id AS row_id, client_id, token, token_key_id FROM apple_tokens WHERE token_key_id = \(keyID)
                UNION ALL SELECT 1, id, client_id, token, token_key_id FROM apple_revocations
                WHERE token_key_id = \(keyID) AND done_at IS NULL
            ) AS sealed ORDER BY source, row_id, client_id LIMIT 1 OFFSET \(position)
            """
        ).first.map {
            SealedAppleToken(
                ciphertext: try $0.decode(column: "token"), keyID: try $0.decode(column: "token_key_id"),
                clientID: try $0.decode(column: "client_id"))
        }
    }

    /// Whether the server writes a binary log (`log_bin`): without one, no point-in-time recovery.
    package static func writesBinaryLog(on connection: Connection) throws -> Bool {
        let rows = try connection.query("SELECT @@GLOBAL.log_bin AS log_bin")
        return try rows.first?.decode(Int.self, column: "log_bin") == 1
    }

    /// The server's version, as `SELECT VERSION()` gives it.
    package static func serverVersion(on connection: Connection) throws -> String {
        try connection.query("SELECT VERSION() AS version").first?.decode(column: "version") ?? ""
    }

    /// The rows of each of `countedTables` in the connection's database.
    package static func rowCounts(on connection: Connection) throws -> [(table: String, rows: Int)] {
        try countedTables.map { table in
            let rows = try connection.query("SELECT COUNT(*) AS n FROM \(raw: table)")
            return (table, try rows.first?.decode(Int.self, column: "n") ?? 0)
        }
    }

    /// The tables (and views) of database `name`; nil when the database does not exist.
    package static func tableCount(database name: String, on connection: Connection) throws -> Int? {
        let exists = try connection.query("SELECT COUNT(*) AS n FROM information_schema.schemata WHERE schema_name = \(name)")
        guard try exists.first?.decode(Int.self, column: "n") == 1 else { return nil }
        let tables = try connection.query("SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = \(name)")
        return try tables.first?.decode(Int.self, column: "n") ?? 0
    }

    /// Creates database `name` (utf8mb4, as `siwa setup` does) unless it exists.
    /// - Precondition: `name` is a database name of letters, digits, `_` and `$` (`isPlainName`).
    package static func createDatabase(_ name: String, on connection: Connection) throws {
        precondition(isPlainName(name), "a database name of letters, digits, _ and $")
        _ = try connection.execute(
            "CREATE DATABASE IF NOT EXISTS `\(raw: name)` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
    }

    /// Drops database `name` and everything in it, if it exists.
    /// - Precondition: `name` is a plain database name (`isPlainName`).
    package static func dropDatabase(_ name: String, on connection: Connection) throws {
        precondition(isPlainName(name), "a database name of letters, digits, _ and $")
        _ = try connection.execute("DROP DATABASE IF EXISTS `\(raw: name)`")
    }

    /// Whether `name` can be spliced between backquotes as it is: 1 to 64 ASCII letters, digits,
    /// `_` or `$`.
    package static func isPlainName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.unicodeScalars.allSatisfy {
                $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_" || $0 == "$")
            }
    }
}
