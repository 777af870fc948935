package import AccountData
package import MariaDB

/// A delivery claimed for an attempt: the event's body, exactly as recorded, for one endpoint.
package struct DueDelivery: Sendable, Equatable {
    /// The event's row.
    package var eventRow: UInt64
    /// The event id receivers see (`evt_…`).
    package var eventID: String
    package var type: String
    package var userID: UInt64
    package var endpoint: String
    package var body: String
    /// This attempt's number, from 1.
    package var attempt: Int
}

/// The deliveries of the webhook outbox: claimed one at a time by `siwa jobs`, retried with the
/// delays its caller computes, every attempt logged. Events of one user reach one endpoint in the
/// order they were recorded: a delivery is not claimed while an earlier one of the same user to
/// the same endpoint is pending.
package enum WebhookDeliveries {
    /// Claims the delivery due longest (by its due time, then its event) to one of `endpoints` that
    /// no earlier pending delivery of the same user to the same endpoint holds back. The due
    /// deliveries are read in the order of their index (state, due time), so a claim stops after
    /// its few candidates even while a backlog of thousands is due; in the order of events it
    /// sorted the whole backlog for every claim. Its next attempt is pushed `lease` seconds away
    /// first, so that a sender that stops half way retries later, and two senders never claim it
    /// both. A claimed delivery stays pending until its outcome is recorded, so the user's next one
    /// is not claimed before then, however many senders claim at once.
    /// - Parameter spread: senders claiming at once pass 0, 1, 2...: each reads `4 + spread`
    ///   candidates and tries them from its own place, so that they seldom race for the same row.
    package static func claimNext(endpoints: [String], lease: Int, spread: Int = 0, on connection: Connection) throws -> DueDelivery? {
        guard !endpoints.isEmpty else { return nil }
        let candidates = try connection.query(
            """
            SELECT d.event_id, e.public_id, e.event_type, d.user_id, d.endpoint, e.body, d.attempts
            FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
            WHERE d.state = 'pending' AND d.next_attempt_at <= UTC_TIMESTAMP(3) AND d.endpoint IN (\(list: endpoints))
                AND NOT EXISTS (
                    SELECT 1 FROM webhook_deliveries p
                    WHERE p.endpoint = d.endpoint AND p.user_id = d.user_id AND p.state = 'pending' AND p.event_id < d.event_id)
            ORDER BY d.next_attempt_at, d.event_id LIMIT \(4 + spread)
            """)
        let start = candidates.isEmpty ? 0 : spread % candidates.count
        for row in candidates[start...] + candidates[..<start] {
            var due = DueDelivery(
                eventRow: try row.decode(column: "event_id"), eventID: try row.decode(column: "public_id"),
                type: try row.decode(column: "event_type"), userID: try row.decode(column: "user_id"),
                endpoint: try row.decode(column: "endpoint"), body: try row.decode(column: "body"),
                attempt: try row.decode(column: "attempts"))
            let won =
                try connection.execute(
                    """
                    UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
                    WHERE event_id = ? AND endpoint = ? AND state = 'pending' AND attempts = ? AND next_attempt_at <= UTC_TIMESTAMP(3)
                    """, lease, due.eventRow, due.endpoint, due.attempt
                ).affectedRows == 1
            guard won else { continue }
            due.attempt += 1
            return due
        }
        return nil
    }

    /// The endpoint answered 2xx.
    package static func markDelivered(_ delivery: DueDelivery, status: Int, milliseconds: Int, on connection: Connection) throws {
        try connection.transaction {
            _ = try connection.execute(
                """
                UPDATE webhook_deliveries SET state = 'delivered', delivered_at = UTC_TIMESTAMP(3), last_status = ?, last_error = NULL
                WHERE event_id = ? AND endpoint = ?
                """, status, delivery.eventRow, delivery.endpoint)
            try log(delivery, status: status, error: nil, milliseconds: milliseconds, on: connection)
        }
    }

    /// The attempt failed: the next one is due in `retryIn` seconds; once the delivery has been
    /// pending for `retryHours`, it is marked failed and the user's later events go ahead
    /// (`redeliver` sends it again).
    /// - Parameters:
    ///   - status: the endpoint's HTTP status; nil when it could not be reached.
    ///   - error: a description without secrets.
    ///   - retryIn: seconds until the next attempt.
    /// - Returns: true when the delivery was given up.
    @discardableResult
    package static func markFailed(
        _ delivery: DueDelivery, status: Int?, error: String, milliseconds: Int, retryIn: Int, retryHours: Int, on connection: Connection
    ) throws -> Bool {
        try connection.transaction {
            _ = try connection.execute(
                """
                UPDATE webhook_deliveries
                SET state = IF(pending_since < UTC_TIMESTAMP(3) - INTERVAL ? HOUR, 'failed', 'pending'),
                    next_attempt_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND, last_status = ?, last_error = ?
                WHERE event_id = ? AND endpoint = ?
                """, retryHours, retryIn, status, ColumnText.fitted(error, maximum: 255), delivery.eventRow,
                delivery.endpoint)
            try log(delivery, status: status, error: error, milliseconds: milliseconds, on: connection)
            return try connection.query(
                "SELECT state = 'failed' AS given_up FROM webhook_deliveries WHERE event_id = ? AND endpoint = ?", delivery.eventRow,
                delivery.endpoint
            ).first?.decode(column: "given_up") ?? false
        }
    }

    private static func log(_ delivery: DueDelivery, status: Int?, error: String?, milliseconds: Int, on connection: Connection) throws {
        _ = try connection.execute(
            "INSERT INTO webhook_attempts (event_id, endpoint, status, error, duration_ms) VALUES (?, ?, ?, ?, ?)", delivery.eventRow,
            delivery.endpoint, status, error.map { ColumnText.fitted($0, maximum: 255) }, max(0, milliseconds))
    }

    /// The delivery log, newest first: every attempt, or those of one event or one user.
    package static func attempts(eventID: String? = nil, userID: UInt64? = nil, limit: Int, on connection: Connection) throws
        -> [DeliveryAttempt]
    {
        // One statement per filter, each whole, so that an event's or a user's attempts are found
        // through their index (one statement for all, with COALESCE, read every attempt backwards
        // until it had found `limit` of them).
        let select: SQL = """
            SELECT \(UnixTime.seconds("a.attempted_at")) AS attempted, e.public_id, e.event_type, e.user_id, a.endpoint, a.status,
                a.error, a.duration_ms
            FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id
            """
        let rows =
            if let eventID {
                try connection.query(
                    "\(select) WHERE e.public_id = ? AND e.user_id = COALESCE(?, e.user_id) ORDER BY a.id DESC LIMIT ?", eventID, userID,
                    limit)
            } else if let userID {
                try connection.query("\(select) WHERE e.user_id = ? ORDER BY a.id DESC LIMIT ?", userID, limit)
            } else {
                try connection.query("\(select) ORDER BY a.id DESC LIMIT ?", limit)
            }
        return try rows.map { row in
            DeliveryAttempt(
                time: try row.decode(column: "attempted"), eventID: try row.decode(column: "public_id"),
                type: try row.decode(column: "event_type"), userID: try row.decode(column: "user_id"),
                endpoint: try row.decode(column: "endpoint"),
                status: try row.decode(column: "status"), error: try row.decode(column: "error"),
                milliseconds: try row.decode(column: "duration_ms"))
        }
    }

    /// How many deliveries each endpoint has pending, delivered and failed.
    package static func counts(on connection: Connection) throws -> [DeliveryCount] {
        try connection.query(
            """
            SELECT d.endpoint, CAST(d.state AS CHAR) AS state, COUNT(*) AS count, \(UnixTime.seconds("MIN(e.created_at)")) AS oldest
            FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
            GROUP BY d.endpoint, d.state ORDER BY d.endpoint, d.state
            """
        ).map { row in
            DeliveryCount(
                endpoint: try row.decode(column: "endpoint"), state: try row.decode(column: "state"),
                count: try row.decode(column: "count"),
                oldest: try row.decode(column: "oldest"))
        }
    }

    /// Sends events again to `endpoints`: those named by id, or every failed delivery when `ids`
    /// is nil. A delivered or failed one becomes pending again and is due at once, with a new
    /// retry window; an endpoint added since the event was recorded gets a delivery too.
    /// - Returns: how many deliveries were queued.
    package static func redeliver(eventIDs ids: [String]?, to endpoints: [String], on connection: Connection) throws -> Int {
        guard !endpoints.isEmpty else { return 0 }
        return try connection.transaction {
            guard let ids else {
                return Int(
                    try connection.execute(
                        """
                        UPDATE webhook_deliveries
                        SET state = 'pending', attempts = 0, next_attempt_at = UTC_TIMESTAMP(3), pending_since = UTC_TIMESTAMP(3)
                        WHERE state = 'failed' AND endpoint IN (\(list: endpoints))
                        """
                    ).affectedRows)
            }
            var queued = 0
            for id in ids {
                guard let row = try connection.query("SELECT id, user_id FROM webhook_events WHERE public_id = ?", id).first else {
                    continue
                }
                let eventRow: UInt64 = try row.decode(column: "id")
                let userID: UInt64 = try row.decode(column: "user_id")
                for endpoint in endpoints {
                    _ = try connection.execute(
                        """
                        INSERT INTO webhook_deliveries (event_id, endpoint, user_id) VALUES (?, ?, ?)
                        ON DUPLICATE KEY UPDATE state = 'pending', attempts = 0, next_attempt_at = UTC_TIMESTAMP(3),
                            pending_since = UTC_TIMESTAMP(3), delivered_at = NULL
                        """, eventRow, endpoint, userID)
                    queued += 1
                }
            }
            return queued
        }
    }
}
