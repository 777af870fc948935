package import Accounts
import Foundation
package import MariaDB

/// How long `siwa jobs` keeps the rows of each table that grows with use (`GrowingTable`), and how
/// it deletes them: in batches of `batch` rows, each a statement of its own, so that a batch's
/// locks last milliseconds and a sign-in never waits on a purge for long, each full batch followed
/// by a pause as long as the batch took (`rest`), so that a purge of millions of rows takes at most
/// about half of the database's time it could, until a table has no more rows past their retention
/// or the pass's `timeBudget` is spent; the rest waits for the next pass (and shows as the table's
/// oldest age on `GET /metrics`).
package struct RetentionPolicy: Sendable, Equatable {
    /// Days audit events are kept (`SIWA_AUDIT_RETENTION_DAYS`).
    package var auditEventDays: Int
    /// Days ended sessions and spent refresh tokens are kept (`SIWA_SESSION_RETENTION_DAYS`): as
    /// long, a spent refresh token presented again ends its session as a theft.
    package var sessionDays: Int
    /// Days lifecycle webhook events, their deliveries and attempts are kept
    /// (`SIWA_WEBHOOK_RETENTION_DAYS`); an event a delivery still waits for is kept until it is
    /// delivered or given up.
    package var webhookDays: Int
    /// Days the records of Apple's notifications and of the revocations Apple accepted are kept
    /// (`SIWA_APPLE_RECORD_RETENTION_DAYS`).
    package var appleRecordDays: Int
    /// Rows one statement deletes.
    package var batch: Int
    /// Seconds one pass may spend purging, over every table.
    package var timeBudget: Double
    /// The pause after each full batch, as a multiple of the time the batch took.
    package var rest: Double

    package init(
        auditEventDays: Int = 365, sessionDays: Int = 30, webhookDays: Int = 30, appleRecordDays: Int = 30, batch: Int = 1_000,
        timeBudget: Double = 10, rest: Double = 1
    ) {
        self.auditEventDays = auditEventDays
        self.sessionDays = sessionDays
        self.webhookDays = webhookDays
        self.appleRecordDays = appleRecordDays
        self.batch = batch
        self.timeBudget = timeBudget
        self.rest = rest
    }

    /// Seconds a table's rows are kept after the point its retention counts from.
    package func seconds(for table: GrowingTable) -> Int {
        switch table {
        case .auditEvents: auditEventDays * 86_400
        case .endedSessions, .spentRefreshTokens: sessionDays * 86_400
        case .webhookEvents: webhookDays * 86_400
        case .appleNotifications, .appleRevocations: appleRecordDays * 86_400
        // From its token's expiry on, the token itself is refused: the record has done its work.
        case .usedNonces: 0
        // Past their expiry they answer only "expired"; an hour keeps that answer for a late click.
        case .webSignIns: 3_600
        case .linkTokens: 86_400
        // Polled for the last `SessionRevocations.window` seconds: an hour is far beyond it.
        case .sessionRevocations: 3_600
        }
    }

    /// What one pass deleted.
    package struct Pass: Sendable, Equatable {
        /// Rows deleted, by table (webhook events count without their deliveries and attempts).
        package var deleted: [GrowingTable: UInt64] = [:]
        /// Tables that still had rows past their retention when the time budget ran out.
        package var unfinished: [GrowingTable] = []

        /// Rows deleted in all.
        package var total: UInt64 { deleted.values.reduce(0, +) }
    }

    /// Deletes, table by table, the rows past their retention, a batch per statement, until each
    /// table has none left or `timeBudget` seconds have passed.
    package func purge(on database: Connection, clock: any WallClock) throws -> Pass {
        let deadline = clock.now() + timeBudget
        var pass = Pass()
        for table in GrowingTable.allCases {
            var deleted: UInt64 = 0
            var last: UInt64
            repeat {
                guard clock.now() < deadline else {
                    pass.unfinished.append(table)
                    break
                }
                let started = clock.now()
                last = try table.purge(olderThan: seconds(for: table), limit: batch, on: database)
                deleted += last
                let pause = (clock.now() - started) * rest
                if last == UInt64(batch) && pause > 0 { Thread.sleep(forTimeInterval: min(pause, 1)) }
            } while last == UInt64(batch)
            if deleted > 0 { pass.deleted[table] = deleted }
        }
        return pass
    }
}
