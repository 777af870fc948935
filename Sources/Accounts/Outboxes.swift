package import MariaDB

/// The backlog of the durable outboxes: the revocations waiting for Apple and the lifecycle
/// webhook deliveries waiting for the app's backend.
package enum Outboxes {
    package struct Backlog: Sendable, Equatable {
        /// `revocations` or `webhooks`.
        package var outbox: String
        /// Rows waiting.
        package var depth: Int
        /// Rows whose attempt is due now: the others wait for a retry after a failure. Due rows
        /// that stay many mean the sender falls behind, or is not running.
        package var due: Int
        /// Seconds since the oldest waiting row was queued; 0 when none waits.
        package var oldestAge: Int
    }

    /// Both outboxes' backlogs, by the database's clock, in one statement.
    package static func backlogs(on connection: Connection) throws -> [Backlog] {
        try connection.query(
            """
            SELECT 'revocations', COUNT(*), CAST(COALESCE(SUM(next_attempt_at <= UTC_TIMESTAMP(3)), 0) AS SIGNED),
                COALESCE(TIMESTAMPDIFF(SECOND, MIN(created_at), UTC_TIMESTAMP(3)), 0)
            FROM apple_revocations WHERE done_at IS NULL
            UNION ALL
            SELECT 'webhooks', COUNT(*), CAST(COALESCE(SUM(next_attempt_at <= UTC_TIMESTAMP(3)), 0) AS SIGNED),
                COALESCE(TIMESTAMPDIFF(SECOND, MIN(pending_since), UTC_TIMESTAMP(3)), 0)
            FROM webhook_deliveries WHERE state = 'pending'
            """
        ).map { row in
            Backlog(
                outbox: try row.decode(at: 0), depth: try row.decode(at: 1), due: try row.decode(at: 2), oldestAge: try row.decode(at: 3))
        }
    }
}
