package import Accounts
import Foundation
import JOSE
package import MariaDB

/// Runs `siwa migrate`: applies the pending files of a `Migrator` once each, in order, one
/// statement at a time, under a lease that serialises runs, with the statements of
/// `MigrationStatements`.
///
/// A run can be killed at any point and run again (docs/OPERATIONS.md, "Migrations"). MariaDB
/// commits DDL implicitly, so a file of several statements cannot be rolled back as a whole: each
/// statement is recorded in `schema_migrations_progress` once it completed, and the next run goes
/// on from the first statement not recorded. That one may have completed before the kill, so every
/// statement must be safe to run again after itself (`Migrator.unrepeatable`). Concurrent runs are
/// serialised by a lease in the `schema_migrations_lock` row, which replicates (on a Galera cluster
/// `GET_LOCK()` is local to a node, and a row lock would end at the first DDL's implicit commit).
package struct MigrationRunner: Sendable {
    /// The files to apply.
    package let migrator: Migrator

    /// - Parameter migrator: the files to apply.
    package init(_ migrator: Migrator) {
        self.migrator = migrator
    }

    /// Seconds `siwa migrate` waits for one statement's answer: long, since a run that stopped
    /// waiting while the server still ran its statement would leave it running unsupervised.
    package static let migrationReadTimeout = 86_400

    /// Applies every pending migration in order, one statement at a time, going on where a run that
    /// was killed stopped.
    /// - Parameters:
    ///   - connection: a connection that allows multiple statements.
    ///   - wait: seconds to wait for the lease another live run holds.
    ///   - log: told each file and statement as it is applied, and a lease taken over.
    /// - Returns: the migrations completed by this call.
    /// - Throws: `MigrationError` when an applied file changed, disappeared, or a pending file is older
    ///   than an applied one, when a statement fails (naming the file and the statement), when
    ///   another run holds the lease, or when the connection holding the lease was lost;
    ///   `MariaDBError` when the bookkeeping around the files fails.
    package func migrate(on connection: Connection, wait: Double = 60, log: (String) -> Void = { _ in }) throws -> [Migration] {
        let lease = try MigrationLease.acquire(on: connection, wait: wait, log: log)
        defer { lease.release(on: connection) }

        try MigrationStatements.createBookkeepingTables(on: connection)
        let applied = try migrator.applied(on: connection)
        try migrator.verify(applied: applied)
        let progress = try MigrationStatements.progress(on: connection)
        var done: [Migration] = []
        for migration in migrator.migrations where applied[migration.version] == nil {
            let statements = migration.statements
            var next = 0
            if let stopped = progress[migration.version] {
                guard stopped.checksum == migration.checksum else {
                    throw MigrationError(problems: [
                        "\(migration.fileName) changed after a run applied \(stopped.done) of its statements and stopped: "
                            + "restore the file that run had, and run again"
                    ])
                }
            }
            if let batch = migration.batch, statements.count == 1 {
                try applyInBatches(
                    migration, batch, statement: statements[0], from: progress[migration.version]?.batchNext, lease: lease,
                    on: connection, log: log)
                next = statements.count
            } else if let stopped = progress[migration.version] {
                next = min(stopped.done, statements.count)
                log("applying \(migration.fileName) from statement \(next + 1) of \(statements.count) (a run stopped there)")
            } else {
                log("applying \(migration.fileName)")
            }
            while next < statements.count {
                try lease.renew(on: connection)
                // The first statement not recorded may have completed before its run was killed:
                // each is safe to run again after itself (`unrepeatable`).
                do {
                    // A statement of a checked file (`Migrator.unrepeatable`), run as written.
                    try connection.run("\(raw: statements[next])", inSession: lease.session)
                } catch {
                    throw MigrationError(problems: [
                        "\(migration.fileName) failed at statement \(next + 1) of \(statements.count): \(String(reflecting: error))"
                    ])
                }
                next += 1
                if next < statements.count {
                    try MigrationRunner.retryingAborts { [next] in
                        try MigrationStatements.recordProgress(of: migration, done: next, on: connection)
                    }
                    log("  \(migration.fileName): statement \(next) of \(statements.count) applied")
                }
            }
            // The file's record and the end of its progress, in one commit, in the lease's session.
            try lease.renew(on: connection)
            try MigrationRunner.retryingAborts { try MigrationStatements.recordApplied(migration, on: connection) }
            done.append(migration)
        }
        return done
    }

    /// Applies a batched file (`Migration.Batch`): its statement once per batch of rows, each batch
    /// committed on its own and recorded, so that no transaction holds more than a batch's locks
    /// (or replicates more than a batch to a cluster) and a run that was killed goes on from the
    /// first batch it did not record. Rows written meanwhile past the last batch's bound are not
    /// the file's: a batched file copies what an older siwa wrote, with every older siwa stopped.
    /// - Parameter from: where the batch column's values to apply begin (a stopped run's next
    ///   batch); nil from the first row.
    func applyInBatches(
        _ migration: Migration, _ batch: Migration.Batch, statement: String, from resume: UInt64?, lease: MigrationLease,
        on connection: Connection, log: (String) -> Void
    ) throws {
        log("applying \(migration.fileName) in batches of \(batch.rows) rows of \(batch.table)")
        if let resume { log("  \(migration.fileName): going on from \(batch.table).\(batch.column) \(resume) (a run stopped there)") }
        var from = try MigrationStatements.batchStart(batch, from: resume, on: connection)
        var batches = 0
        while let start = from {
            try lease.renew(on: connection)
            let end = try MigrationStatements.batchEnd(batch, from: start, on: connection)
            do {
                // The bounds are integers; the statement, of a checked file (`Migrator.locking`), runs as written.
                try connection.run(
                    "SET @siwa_batch_from = \(raw: String(start)), @siwa_batch_to = \(raw: String(end)); \(raw: statement)",
                    inSession: lease.session)
            } catch {
                throw MigrationError(problems: [
                    "\(migration.fileName) failed at the batch of \(batch.table).\(batch.column) from \(start) to \(end): "
                        + String(reflecting: error)
                ])
            }
            try MigrationRunner.retryingAborts { try MigrationStatements.recordBatch(of: migration, next: end, on: connection) }
            batches += 1
            if batches % 100 == 0 { log("  \(migration.fileName): \(batches) batches applied, up to \(batch.column) \(end)") }
            from = try MigrationStatements.batchStart(batch, from: end, on: connection)
        }
        log("  \(migration.fileName): \(batches) batches of up to \(batch.rows) rows of \(batch.table)")
    }

    /// Runs `body`, again when it is aborted as a deadlock, up to `attempts` times in all, 50 ms apart.
    ///
    /// On a Galera cluster a statement of the run holding the lease can be aborted by another node's
    /// replicated DDL on its table: two runs on a new database can both find `schema_migrations_lock`
    /// missing, and the waiting run's CREATE TABLE IF NOT EXISTS may arrive after the other took the
    /// lease (3 rounds in 100 under load in 50_galera.sh, before the runs checked for the table first).
    /// An aborted statement was rolled back, and each `body` here can be run again without effect
    /// (a renewal, a release) or fails loudly if it did commit (a duplicate record of a file).
    package static func retryingAborts<T>(attempts: Int = 10, _ body: () throws -> T) throws -> T {
        var attempt = 1
        while true {
            do {
                return try body()
            } catch let error as MariaDBError where error.code == .deadlock && attempt < attempts {
                attempt += 1
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }
}

/// The lease that serialises migration runs, on every server of a cluster: the one row of
/// `schema_migrations_lock` names its holder until it is released or expires. Taking it is one
/// conditional `UPDATE` in its own commit; two runs on two Galera nodes cannot both change the row
/// (one fails certification).
///
/// A run that was killed leaves the lease behind. The row also names the holder's server session
/// (its user, server and connection id), and the holder sends its statements only in that session
/// (`Connection.run(_:inSession:)`): once the session has left the server's process list, nothing
/// of that run is executing or will be, and a run on the same server takes the lease over at once.
/// A run on another server of a cluster, which cannot see that list, waits for the lease to expire.
struct MigrationLease {
    /// Seconds a lease lasts without renewal; renewed before each statement. A statement running
    /// longer than this on a cluster could let a run on another node take the lease.
    static let duration = 300
    /// Seconds between two attempts to take a lease another run holds: short, since a stopped run's
    /// session leaves the process list moments after its client died.
    static let pollInterval = 0.05
    let holder: String
    /// The connection's session (`Connection.session`) that took the lease.
    let session: Int

    /// Takes the lease, waiting up to `wait` seconds for another live run to release it.
    /// - Throws: `MigrationError` when another run holds it all that time.
    static func acquire(on connection: Connection, wait: Double, log: (String) -> Void) throws -> MigrationLease {
        let holder = try SecureRandom.bytes(count: 16).map { String(format: "%02x", $0) }.joined()
        let deadline = Date().addingTimeInterval(wait)
        var tableReady = false
        while true {
            do {
                // Created only when missing, and once (`MigrationStatements.prepareLockTable`). Two
                // runs on a new database can both find it missing: the running run's statements on
                // the table are tried again when aborted (`retryingAborts`).
                if !tableReady {
                    try MigrationStatements.prepareLockTable(on: connection)
                    tableReady = true
                }
                if try take(holder: holder, on: connection, log: log) {
                    return MigrationLease(holder: holder, session: connection.session)
                }
            } catch let error as MariaDBError where error.code == .deadlock {
                // Another node's run changed the row, or its DDL aborted this statement: try again.
            }
            guard Date() < deadline else { throw MigrationError(problems: ["another migration run holds the lock"]) }
            Thread.sleep(forTimeInterval: pollInterval)
        }
    }

    /// One attempt: takes the lease when it is free, expired, or held by a session that has ended
    /// on this server.
    private static func take(holder: String, on connection: Connection, log: (String) -> Void) throws -> Bool {
        guard let row = try MigrationStatements.lockRow(on: connection) else { return false }
        var free = row.holder == nil || row.expired
        if !free, row.onThisServer == true, let id = row.sessionConnection {
            // A session absent from the process list has ended, and with it everything it ran; a
            // lease taken before the server last started was held by a session that ended then (its
            // id may since name another session).
            let ended = try row.takenBeforeRestart == true || MigrationStatements.sessionEnded(id, on: connection)
            if ended {
                log("taking over the lease of a run that stopped (its connection \(id) has ended)")
                free = true
            }
        }
        guard free else { return false }
        return try MigrationStatements.takeLock(holder: holder, duration: duration, replacing: row.holder, on: connection)
    }

    /// Extends the lease by `duration` from now.
    /// - Throws: `MigrationError` when it expired and another run took it, or when the session that
    ///   took it was lost (a reconnected connection is another session).
    func renew(on connection: Connection) throws {
        guard connection.session == session else {
            throw MigrationError(problems: ["the connection holding the migration lock was lost; run siwa migrate again"])
        }
        let held = try MigrationRunner.retryingAborts {
            try MigrationStatements.renewLock(holder: holder, duration: MigrationLease.duration, on: connection)
        }
        if held != true { throw MigrationError(problems: ["the migration lock expired and another run took it"]) }
    }

    /// Gives the lease up (best effort: a run waiting on the same server takes it over once this
    /// session ends, one on another server when it expires). Only in the session that took it: a
    /// run whose session was lost may have left a statement running on the server, and the lease
    /// stays with that session until the server has ended it.
    func release(on connection: Connection) {
        guard connection.session == session else { return }
        _ = try? MigrationRunner.retryingAborts { try MigrationStatements.releaseLock(holder: holder, on: connection) }
    }
}
