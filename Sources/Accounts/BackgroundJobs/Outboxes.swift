package import AccountData
package import MariaDB

/// The backlog of the durable outboxes: the revocations waiting for Apple and the lifecycle
/// webhook deliveries waiting for the app's backend.
package enum Outboxes {
    /// Both outboxes' backlogs, by the database's clock, in one statement.
    package static func backlogs(on connection: Connection) throws -> [OutboxBacklog] {
        try connection.query(
            """
            SELECT 'revocations' AS outbox, COUNT(*) AS depth, CAST(COALESCE(SUM(next_attempt_at <= UTC_TIMESTAMP(3)), 0) AS SIGNED) AS due,
                COALESCE(TIMESTAMPDIFF(SECOND, MIN(created_at), UTC_TIMESTAMP(3)), 0) AS oldest_age
            FROM apple_revocations WHERE done_at IS NULL
            UNION ALL
            SELECT 'webhooks', COUNT(*), CAST(COALESCE(SUM(next_attempt_at <= UTC_TIMESTAMP(3)), 0) AS SIGNED),
                COALESCE(TIMESTAMPDIFF(SECOND, MIN(pending_since), UTC_TIMESTAMP(3)), 0)
            FROM webhook_deliveries WHERE state = 'pending'
            """
        ).map { row in
            OutboxBacklog(
                outbox: try row.decode(column: "outbox"), depth: try row.decode(column: "depth"), due: try row.decode(column: "due"),
                oldestAge: try row.decode(column: "oldest_age"))
        }
    }
}
