package import AccountData
import Accounts
import AppleID
import CoreMetrics
import JOSE
import Logging
import MariaDB
import Telemetry

/// What `GET /health` and `GET /metrics` report: the database, Apple's keys, the outboxes.
package struct StatusUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension StatusUseCases {
    /// Whether this thread reaches the database (a ping, which also reconnects a lost connection),
    /// and the state of Apple's keys (never fetched here: a health check makes no call to Apple).
    /// - Returns: whether the database answers, the state of Apple's keys, and, with several
    ///   database servers, the one this worker uses (its first choice while none answers).
    package func health() -> (databaseUp: Bool, appleKeys: String, databaseNode: String?) {
        let keys = core.apple.map { $0.keys.health.rawValue } ?? "not_configured"
        let cluster = core.databaseServers > 1
        do {
            // A Galera node out of the cluster answers a ping but refuses statements (1047): with
            // several servers the check is a statement, which moves to the next server if refused.
            if cluster { try database.checkAnswersStatements() } else { try database.ping() }
            return (true, keys, cluster ? database.server.description : nil)
        } catch {
            logger.warning("health check: database unavailable", metadata: ["error": "\(error)"])
            return (false, keys, cluster ? database.server.description : nil)
        }
    }

    /// Seconds since Apple's key set was fetched; nil before the first fetch, or when this process
    /// does not fetch them (a fixed key set).
    package var appleKeysAge: Double? {
        (core.apple?.keys as? AppleKeyCache)?.status.fetchedAt.map { clock.now() - $0 }
    }

    /// The backlogs of the revocation and webhook outboxes.
    package func outboxBacklogs() throws -> [OutboxBacklog] {
        try Outboxes.backlogs(on: database)
    }

    /// How far behind the daily check of Apple's tokens is: the oldest due check's age, and the
    /// due checks counted up to the pace's cap.
    package func validationBacklog() throws -> ValidationBacklog {
        try Outboxes.validationBacklog(cap: core.apple?.settings.validationPace.dueCap ?? AppleValidationPace().dueCap, on: database)
    }

    /// Seconds since the oldest row of each table that grows with use reached the point its
    /// retention counts from, by table name.
    package func retentionAges() throws -> [(table: String, age: Int)] {
        try GrowingTable.oldestAges(on: database).map { ($0.key.rawValue, $0.value) }.sorted { $0.table < $1.table }
    }
}
