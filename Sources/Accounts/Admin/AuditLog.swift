package import MariaDB

/// Security-relevant events in `audit_events`: ids, a type and a small JSON detail, never a secret.
package enum AuditLog {
    /// Records one event; in a transaction, with its next statement or its COMMIT
    /// (`Connection.executeWithNext`).
    /// - Parameter detail: a JSON object as text, or nil.
    package static func record(
        _ type: String, userID: UInt64?, sessionID: UInt64? = nil, remoteAddress: String? = nil, detail: String? = nil,
        on connection: Connection
    ) throws {
        try connection.executeWithNext(
            "INSERT INTO audit_events (event_type, user_id, session_id, remote_address, detail) VALUES (?, ?, ?, ?, ?)",
            type, userID, sessionID, remoteAddress.map { ColumnText.fitted($0, maximum: 45) }, detail)
    }

    /// The latest events, newest first: of `userID`, or of every user when nil; only those after
    /// the event `afterID` when given (to follow the log).
    package static func recent(
        userID: UInt64?, afterID: UInt64? = nil, limit: Int, on connection: Connection
    ) throws -> [UserRecord.AuditEvent] {
        // One statement per filter, each whole, so that a user's events are found through their index.
        let columns: SQL = """
            id, event_type, \(UnixTime.milliseconds("occurred_at")) AS occurred_ms, user_id, session_id, remote_address, detail
            """
        let rows =
            if let userID {
                try connection.query(
                    "SELECT \(columns) FROM audit_events WHERE user_id = ? AND id > ? ORDER BY id DESC LIMIT ?", userID, afterID ?? 0,
                    Int64(limit))
            } else {
                try connection.query(
                    "SELECT \(columns) FROM audit_events WHERE id > ? ORDER BY id DESC LIMIT ?", afterID ?? 0, Int64(limit))
            }
        return try rows.map { row in
            UserRecord.AuditEvent(
                id: try row.decode(column: "id"), type: try row.decode(column: "event_type"),
                occurredAt: try row.decode(column: "occurred_ms"),
                userID: try row.decode(column: "user_id"), sessionID: try row.decode(column: "session_id"),
                remoteAddress: try row.decode(column: "remote_address"), detail: try row.decode(column: "detail"))
        }
    }

    /// How many `account_exported` events the user has in the last hour, and the seconds until the
    /// oldest of them is an hour old (3600 when there is none).
    package static func exportsInLastHour(userID: UInt64, on connection: Connection) throws -> (count: Int64, secondsToWait: Int64) {
        let row = try connection.query(
            """
            SELECT COUNT(*) AS count, CAST(3600 - TIMESTAMPDIFF(SECOND, MIN(occurred_at), CURRENT_TIMESTAMP(3)) AS SIGNED) AS seconds_to_wait
            FROM audit_events WHERE user_id = ? AND event_type = 'account_exported'
                AND occurred_at > CURRENT_TIMESTAMP(3) - INTERVAL 1 HOUR
            """, userID
        ).first
        return (try row?.decode(column: "count") ?? 0, try row?.decode(column: "seconds_to_wait") ?? 3600)
    }

    /// `text` as a JSON string for a detail, kept to letters, digits, `_` and `-` (detail values
    /// are internal names, never user input).
    static func name(_ text: String) -> String {
        "\"" + text.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") } + "\""
    }
}
