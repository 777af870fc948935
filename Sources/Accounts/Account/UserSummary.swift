import Foundation
package import MariaDB

/// A user as `siwa admin find` lists them.
package struct UserSummary: Sendable, Equatable {
    package var userID: UInt64
    package var name: String?
    package var email: String?
    /// Unix milliseconds.
    package var createdAt: Int64
    package var isDisabled: Bool

    /// At most 100 users whose id (all digits), any email address (with `@`, exact) or Apple `sub` is `query`.
    package static func find(_ query: String, on connection: Connection) throws -> [UserSummary] {
        let query = query.trimmingCharacters(in: .whitespaces)
        // One statement per kind of query, each whole, so that each is answered through its index.
        let columns: SQL = """
            u.id, NULLIF(CONCAT_WS(' ', u.first_name, u.last_name), '') AS name,
                (SELECT address FROM user_emails e WHERE e.user_id = u.id ORDER BY e.id LIMIT 1) AS email,
                \(UnixTime.milliseconds("u.created_at")) AS created_ms, u.disabled_at IS NOT NULL AS disabled
            """
        let rows =
            if !query.isEmpty, query.allSatisfy(\.isASCII), query.allSatisfy(\.isNumber) {
                try connection.query("SELECT \(columns) FROM users u WHERE u.id = ?", query)
            } else if query.contains("@") {
                try connection.query(
                    """
                    SELECT \(columns) FROM users u WHERE u.id IN (SELECT user_id FROM user_emails WHERE address = ?)
                    ORDER BY u.id LIMIT 100
                    """, query)
            } else {
                // The identities are found by (team, sub), once per team: the teams are read from the
                // same index, one entry per team (a loose index scan), so no sub is compared with all.
                try connection.query(
                    """
                    SELECT \(columns) FROM users u WHERE u.id IN (
                        SELECT i.user_id FROM (SELECT DISTINCT team_id FROM apple_identities) teams
                        JOIN apple_identities i ON i.team_id = teams.team_id AND i.sub = ?)
                    ORDER BY u.id LIMIT 100
                    """, query)
            }
        return try rows.map { row in
            UserSummary(
                userID: try row.decode(column: "id"), name: try row.decode(column: "name"), email: try row.decode(column: "email"),
                createdAt: try row.decode(column: "created_ms"), isDisabled: try row.decode(column: "disabled"))
        }
    }
}
