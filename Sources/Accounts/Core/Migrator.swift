import Foundation
import JOSE
package import MariaDB

/// One migration file, `sql/NNNN_name.sql`.
package struct Migration: Sendable, Equatable {
    package let version: Int
    package let name: String
    package let sql: String
    /// Lowercase hex SHA-256 of the file's bytes.
    package let checksum: String

    package var fileName: String { String(format: "%04d_%@.sql", version, name) }
}

/// Problems that stop `siwa migrate` before it changes anything.
package struct MigrationError: Error, CustomStringConvertible {
    package let problems: [String]
    package var description: String { "migrations refused:\n" + problems.map { "  - \($0)" }.joined(separator: "\n") }
}

/// Applies `sql/NNNN_name.sql` files once each, in order, recording each in `schema_migrations`
/// with its checksum; refuses to run when an applied file has changed or disappeared.
///
/// MariaDB commits DDL implicitly, so a migration cannot be rolled back as a whole: from version
/// `oneStatementFrom` on, a file holds one statement. Concurrent runs are serialised by a lease in
/// the `schema_migrations_lock` row, which replicates (on a Galera cluster `GET_LOCK()` is local to
/// a node, and a row lock would end at the first DDL's implicit commit).
package struct Migrator: Sendable {
    package let migrations: [Migration]

    /// Loads the migrations of `directory`.
    /// - Throws: `MigrationError` for badly named files or duplicate versions.
    package init(directory: String) throws {
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".sql") }
        } catch {
            throw MigrationError(problems: ["cannot read the migrations directory \(directory)"])
        }
        var problems: [String] = []
        var migrations: [Migration] = []
        for file in files.sorted() {
            guard let migration = Migrator.parse(fileName: file, directory: directory) else {
                problems.append("\(file): expected a name like 0001_create_users.sql")
                continue
            }
            if migrations.contains(where: { $0.version == migration.version }) {
                problems.append("\(file): version \(migration.version) is used twice")
            }
            migrations.append(migration)
        }
        for migration in migrations where migration.version >= Migrator.oneStatementFrom {
            let statements = Migrator.statementCount(migration.sql)
            if statements != 1 { problems.append("\(migration.fileName): one statement per migration, found \(statements)") }
        }
        if !problems.isEmpty { throw MigrationError(problems: problems) }
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// The first version held to one statement per file (the earlier files were applied as they are).
    package static let oneStatementFrom = 12

    /// The statements of a migration: its `;`-separated parts that are not empty once `--` comment
    /// lines are left out. (A `;` inside a string literal would count as a separator.)
    static func statementCount(_ sql: String) -> Int {
        let code = sql.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("--") }.joined(separator: "\n")
        return code.split(separator: ";").filter { !$0.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }.count
    }

    private static func parse(fileName: String, directory: String) -> Migration? {
        let stem = fileName.dropLast(4)
        let parts = stem.split(separator: "_", maxSplits: 1)
        guard parts.count == 2, parts[0].count == 4, let version = Int(parts[0]), version > 0,
            parts[1].allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }),
            let data = FileManager.default.contents(atPath: directory + "/" + fileName)
        else { return nil }
        return Migration(
            version: version, name: String(parts[1]), sql: String(decoding: data, as: UTF8.self),
            checksum: SHA256.hex(Array(data)))
    }

    /// The applied versions and their checksums; none when `schema_migrations` does not exist yet.
    /// It only reads: `siwa doctor` and `siwa migrate --status` change nothing, not even by DDL
    /// (which a Galera cluster replicates in total order, aborting other nodes' statements on the table).
    package func applied(on connection: Connection) throws -> [Int: String] {
        guard try tableExists("schema_migrations", on: connection) else { return [:] }
        var applied: [Int: String] = [:]
        for row in try connection.query("SELECT version, checksum FROM schema_migrations") {
            applied[try row.decode(column: "version")] = try row.decode(String.self, column: "checksum")
        }
        return applied
    }

    /// Applies every pending migration in order.
    /// - Parameter connection: a connection that allows multiple statements.
    /// - Returns: the migrations applied by this call.
    /// - Throws: `MigrationError` when an applied file changed, disappeared, or a pending file is older
    ///   than an applied one, when a file's statements fail (naming the file), or when another run
    ///   holds the lock; `MariaDBError` when the bookkeeping around the files fails.
    package func migrate(on connection: Connection, wait: Double = 60, log: (String) -> Void = { _ in }) throws -> [Migration] {
        let lease = try MigrationLease.acquire(on: connection, wait: wait)
        defer { lease.release(on: connection) }

        if try !tableExists("schema_migrations", on: connection) { try connection.run(Migrator.createTable) }
        let applied = try applied(on: connection)
        try verify(applied: applied)
        var done: [Migration] = []
        for migration in migrations where applied[migration.version] == nil {
            log("applying \(migration.fileName)")
            try lease.renew(on: connection)
            // Never run again on an error: a file of several statements may have applied some of them.
            do {
                try connection.run(migration.sql)
            } catch {
                throw MigrationError(problems: ["\(migration.fileName) failed: \(String(reflecting: error))"])
            }
            try Migrator.retryingAborts {
                _ = try connection.execute(
                    "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
                    migration.version, migration.name, migration.checksum)
            }
            done.append(migration)
        }
        return done
    }

    /// Checks the recorded migrations against the files.
    /// - Throws: `MigrationError` naming every changed, missing or out-of-order file.
    package func verify(applied: [Int: String]) throws {
        var problems: [String] = []
        let known = migrations.map(\.version).max() ?? 0
        if let newest = applied.keys.max(), newest > known {
            // A downgrade: the schema is a newer siwa's, which this binary may not read or write right.
            problems.append(
                String(
                    format: "the database is newer than this siwa: migration %04d was applied, this siwa knows up to %04d; "
                        + "run the siwa that migrated it (a downgrade is refused), or restore the database backup taken before the upgrade",
                    newest, known))
        }
        for (version, checksum) in applied.sorted(by: { $0.key < $1.key }) where version <= known {
            guard let migration = migrations.first(where: { $0.version == version }) else {
                problems.append(String(format: "migration %04d was applied but its file is missing", version))
                continue
            }
            if migration.checksum != checksum {
                problems.append("\(migration.fileName) changed after it was applied (add a new migration instead)")
            }
        }
        if let newest = applied.keys.max() {
            for migration in migrations where applied[migration.version] == nil && migration.version < newest {
                problems.append("\(migration.fileName) is older than the applied version \(newest)")
            }
        }
        if !problems.isEmpty { throw MigrationError(problems: problems) }
    }

    private static let createTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INT UNSIGNED NOT NULL PRIMARY KEY,
            name VARCHAR(255) NOT NULL,
            checksum CHAR(64) NOT NULL,
            applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
        """
}

/// The lease that serialises migration runs, on every server of a cluster: the one row of
/// `schema_migrations_lock` names its holder until it is released or expires (a run that died
/// leaves it for `duration` seconds). Taking it is one conditional `UPDATE` in its own commit; two
/// runs on two Galera nodes cannot both change the row (one fails certification).
struct MigrationLease {
    /// Seconds a lease lasts without renewal; renewed before each migration.
    static let duration = 300
    let holder: String

    /// Takes the lease, waiting up to `wait` seconds for another run to release it.
    /// - Throws: `MigrationError` when another run holds it all that time.
    static func acquire(on connection: Connection, wait: Double) throws -> MigrationLease {
        let lease = MigrationLease(holder: try SecureRandom.bytes(count: 16).map { String(format: "%02x", $0) }.joined())
        let deadline = Date().addingTimeInterval(wait)
        var tableReady = false
        while true {
            do {
                // Created only when missing, and once: on a Galera cluster even a CREATE TABLE IF NOT
                // EXISTS is replicated in total order and aborts another node's statements on the
                // table, such as the running migration's renewal of its lease (50_galera.sh saw it).
                // Two runs on a new database can both find it missing: the running run's statements
                // on the table are tried again when aborted (`retryingAborts`).
                if !tableReady {
                    if try !tableExists("schema_migrations_lock", on: connection) { try createTable(on: connection) }
                    tableReady = true
                }
                if try lease.take(on: connection) { return lease }
            } catch let error as MariaDBError where error.code == .deadlock {
                // Another node's run changed the row, or its DDL aborted this statement: try again.
            }
            guard Date() < deadline else { throw MigrationError(problems: ["another migration run holds the lock"]) }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    private static func createTable(on connection: Connection) throws {
        try connection.run(
            """
            CREATE TABLE IF NOT EXISTS schema_migrations_lock (
                id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
                holder CHAR(32) NULL,
                expires_at DATETIME(3) NOT NULL
            ) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin
            """)
    }

    /// One attempt: creates the row if needed, then takes it when it is free or expired.
    private func take(on connection: Connection) throws -> Bool {
        _ = try connection.execute("INSERT IGNORE INTO schema_migrations_lock (id, holder, expires_at) VALUES (1, NULL, UTC_TIMESTAMP(3))")
        let taken = try connection.execute(
            """
            UPDATE schema_migrations_lock SET holder = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
            WHERE id = 1 AND (holder IS NULL OR expires_at < UTC_TIMESTAMP(3))
            """, holder, MigrationLease.duration)
        return taken.affectedRows == 1
    }

    /// Extends the lease by `duration` from now.
    /// - Throws: `MigrationError` when it expired and another run took it.
    func renew(on connection: Connection) throws {
        let held: Bool? = try Migrator.retryingAborts {
            _ = try connection.execute(
                "UPDATE schema_migrations_lock SET expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND WHERE id = 1 AND holder = ?",
                MigrationLease.duration, holder)
            // Read back rather than counted: an update within the same millisecond changes no row.
            return try connection.query("SELECT holder <=> ? AS held FROM schema_migrations_lock WHERE id = 1", holder).first?
                .decode(column: "held")
        }
        if held != true { throw MigrationError(problems: ["the migration lock expired and another run took it"]) }
    }

    /// Gives the lease up (best effort: it expires anyway, but a waiting run gives up sooner).
    func release(on connection: Connection) {
        _ = try? Migrator.retryingAborts {
            try connection.execute("UPDATE schema_migrations_lock SET holder = NULL WHERE id = 1 AND holder = ?", holder)
        }
    }
}

/// Whether the connection's database has the table `name`, read without touching the table.
private func tableExists(_ name: String, on connection: Connection) throws -> Bool {
    try !connection.query(
        "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name
    ).isEmpty
}

extension Migrator {
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
