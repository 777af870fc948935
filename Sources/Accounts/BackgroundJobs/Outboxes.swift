package import AccountData
package import MariaDB

/// The backlog of the durable outboxes: the revocations waiting for Apple and the lifecycle
/// webhook deliveries waiting for the app's backend; and that of the daily check of Apple's
/// refresh tokens.
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

    /// How far behind the daily check of Apple's tokens is, in one statement that reads only the
    /// head of the `apple_tokens_validation` index: the oldest due check (its `MIN`), and the due
    /// checks counted up to `cap`. Tokens of another team count while they are due; the claims
    /// put them a month ahead as they reach them (`AppleValidations.claimDue`).
    package static func validationBacklog(cap: Int, on connection: Connection) throws -> ValidationBacklog {
        let row = try connection.query(
            """
            SELECT GREATEST(0, COALESCE(TIMESTAMPDIFF(SECOND, (SELECT MIN(next_validation_at) FROM apple_tokens), UTC_TIMESTAMP(3)), 0))
                    AS overdue,
                (SELECT COUNT(*) FROM (SELECT 1 FROM apple_tokens WHERE next_validation_at <= UTC_TIMESTAMP(3) LIMIT \(cap)) d) AS due
            """)[0]
        return ValidationBacklog(overdueSeconds: try row.decode(column: "overdue"), due: try row.decode(column: "due"), dueCap: cap)
    }
}
