package import MariaDB

/// The tables that grow with use, each with the statement that deletes a batch of its rows past
/// their retention (how long is `RetentionPolicy`'s, in `Identity`) and the age of its oldest such
/// row. Every statement reads an index on the column the retention counts from, so a batch costs
/// its own rows, not the table's size. Rows that grow only with users (users, identities, sync
/// records) leave with their user; sync tombstones go by their collection's `tombstoneDays`.
package enum GrowingTable: String, CaseIterable, Sendable {
    /// Audit events, counted from when they occurred.
    case auditEvents = "audit_events"
    /// Sessions that ended (revoked, or expired without a refresh), counted from their end;
    /// their refresh tokens go with them.
    case endedSessions = "sessions"
    /// Refresh tokens a rotation spent, counted from then: a spent token presented again within
    /// the retention ends its session as a theft; later it is unknown, and only refused.
    case spentRefreshTokens = "refresh_tokens"
    /// Lifecycle webhook events that no delivery still waits for, with their deliveries and
    /// attempts, counted from when they were recorded.
    case webhookEvents = "webhook_events"
    /// The ledger of Apple's server-to-server notifications, counted from their receipt.
    case appleNotifications = "apple_notifications"
    /// Revocations that Apple accepted, counted from then.
    case appleRevocations = "apple_revocations"
    /// Used nonces, counted from their token's expiry.
    case usedNonces = "used_nonces"
    /// Web sign-ins (and the app codes they issued), counted from their expiry.
    case webSignIns = "web_sign_ins"
    /// Link tokens of an older backend, counted from their expiry.
    case linkTokens = "link_tokens"
    /// The log of session revocations that siwa processes poll, counted from the revocation.
    case sessionRevocations = "session_revocations"

    /// Deletes up to `limit` rows that passed their retention `seconds` ago or earlier, in one
    /// statement of its own (autocommit: its locks last one batch).
    /// - Returns: how many rows it deleted (for `webhookEvents`, events; their deliveries and
    ///   attempts go with them).
    package func purge(olderThan seconds: Int, limit: Int, on connection: Connection) throws -> UInt64 {
        let statement: SQL
        switch self {
        case .auditEvents:
            // A TIMESTAMP column, compared in the connection's time zone as it was written.
            statement = "DELETE FROM audit_events WHERE occurred_at < CURRENT_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .endedSessions:
            // A revoked session's `expires_at` is its revocation (`Sessions.revoke`).
            statement = "DELETE FROM sessions WHERE expires_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .spentRefreshTokens:
            statement = "DELETE FROM refresh_tokens WHERE spent_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .webhookEvents:
            statement = """
                DELETE FROM webhook_events
                WHERE created_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND
                    AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id AND d.state = 'pending')
                LIMIT \(limit)
                """
        case .appleNotifications:
            statement = "DELETE FROM apple_notifications WHERE received_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .appleRevocations:
            statement = "DELETE FROM apple_revocations WHERE done_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .usedNonces:
            statement = "DELETE FROM used_nonces WHERE expires_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .webSignIns:
            // An app's code may outlive its sign-in by its own lifetime.
            statement = """
                DELETE FROM web_sign_ins WHERE expires_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND
                    AND (code_expires_at IS NULL OR code_expires_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND)
                LIMIT \(limit)
                """
        case .linkTokens:
            statement = "DELETE FROM link_tokens WHERE expires_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        case .sessionRevocations:
            statement = "DELETE FROM session_revocations WHERE revoked_at < UTC_TIMESTAMP(3) - INTERVAL \(seconds) SECOND LIMIT \(limit)"
        }
        return try connection.execute(statement).affectedRows
    }

    /// Seconds since the oldest row of each table reached the point its retention counts from (0
    /// when there is none, or it lies in the future), by the database's clock, in one statement:
    /// each is the first entry of an index. An age that stays above its table's retention means
    /// the purge falls behind.
    package static func oldestAges(on connection: Connection) throws -> [GrowingTable: Int] {
        let rows = try connection.query(
            """
            SELECT 'audit_events' AS name, TIMESTAMPDIFF(SECOND, (SELECT MIN(occurred_at) FROM audit_events), CURRENT_TIMESTAMP(3)) AS age
            UNION ALL SELECT 'sessions', TIMESTAMPDIFF(SECOND, (SELECT MIN(expires_at) FROM sessions), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'refresh_tokens', TIMESTAMPDIFF(SECOND, (SELECT MIN(spent_at) FROM refresh_tokens), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'webhook_events', TIMESTAMPDIFF(SECOND, (SELECT MIN(created_at) FROM webhook_events), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'apple_notifications', TIMESTAMPDIFF(SECOND, (SELECT MIN(received_at) FROM apple_notifications), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'apple_revocations', TIMESTAMPDIFF(SECOND, (SELECT MIN(done_at) FROM apple_revocations), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'used_nonces', TIMESTAMPDIFF(SECOND, (SELECT MIN(expires_at) FROM used_nonces), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'web_sign_ins', TIMESTAMPDIFF(SECOND, (SELECT MIN(expires_at) FROM web_sign_ins), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'link_tokens', TIMESTAMPDIFF(SECOND, (SELECT MIN(expires_at) FROM link_tokens), UTC_TIMESTAMP(3))
            UNION ALL SELECT 'session_revocations', TIMESTAMPDIFF(SECOND, (SELECT MIN(revoked_at) FROM session_revocations), UTC_TIMESTAMP(3))
            """)
        var ages: [GrowingTable: Int] = [:]
        for row in rows {
            guard let table = GrowingTable(rawValue: try row.decode(column: "name")) else { continue }
            let age: Int? = try row.decode(column: "age")
            ages[table] = max(age ?? 0, 0)
        }
        return ages
    }
}
