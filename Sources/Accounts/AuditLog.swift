package import MariaDB

/// Security-relevant events in `audit_events`: ids, a type and a small JSON detail, never a secret.
package enum AuditLog {
    /// Records one event.
    /// - Parameter detail: a JSON object as text, or nil.
    package static func record(
        _ type: String, userID: UInt64?, sessionID: UInt64? = nil, remoteAddress: String? = nil, detail: String? = nil,
        on connection: Connection
    ) throws {
        _ = try connection.execute(
            "INSERT INTO audit_events (event_type, user_id, session_id, remote_address, detail) VALUES (?, ?, ?, ?, ?)",
            type, userID, sessionID, remoteAddress.map { ColumnText.fitted($0, maximum: 45) }, detail)
    }

    /// `text` as a JSON string for a detail, kept to letters, digits, `_` and `-` (detail values
    /// are internal names, never user input).
    static func name(_ text: String) -> String {
        "\"" + text.filter { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") } + "\""
    }
}
