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

    /// The statements of the file, in order: what `siwa migrate` runs and records one at a time.
    package var statements: [String] { Migrator.statements(sql) }

    /// Whether `recorded` is this file's checksum, or that of an earlier text of it that changed
    /// nothing it makes (`Migrator.rewrittenFiles`).
    func matches(recorded: String) -> Bool {
        recorded == checksum || Migrator.rewrittenFiles[version]?.contains(recorded) == true
    }
}

/// Problems that stop `siwa migrate` before it changes anything.
package struct MigrationError: Error, CustomStringConvertible {
    package let problems: [String]
    package var description: String { "migrations refused:\n" + problems.map { "  - \($0)" }.joined(separator: "\n") }
}

/// Applies `sql/NNNN_name.sql` files once each, in order, recording each in `schema_migrations`
/// with its checksum; refuses to run when an applied file has changed or disappeared.
///
/// A run can be killed at any point and run again (docs/OPERATIONS.md, "Migrations"). MariaDB
/// commits DDL implicitly, so a file of several statements cannot be rolled back as a whole: each
/// statement is recorded in `schema_migrations_progress` once it completed, and the next run goes
/// on from the first statement not recorded. That one may have completed before the kill, so every
/// statement must be safe to run again after itself: `init` refuses DDL without its `IF [NOT]
/// EXISTS` form (`unrepeatable`). Concurrent runs are serialised by a lease in the
/// `schema_migrations_lock` row, which replicates (on a Galera cluster `GET_LOCK()` is local to a
/// node, and a row lock would end at the first DDL's implicit commit).
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
        for migration in migrations {
            let statements = migration.statements
            if migration.version >= Migrator.oneStatementFrom && statements.count != 1 {
                problems.append("\(migration.fileName): one statement per migration, found \(statements.count)")
            }
            for (index, statement) in statements.enumerated() {
                if let reason = Migrator.unrepeatable(statement) {
                    problems.append("\(migration.fileName), statement \(index + 1): \(reason)")
                }
            }
        }
        if !problems.isEmpty { throw MigrationError(problems: problems) }
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// Seconds `siwa migrate` waits for one statement's answer: long, since a run that stopped
    /// waiting while the server still ran its statement would leave it running unsupervised.
    package static let migrationReadTimeout = 86_400

    /// The first version held to one statement per file (the earlier files were applied as they are).
    package static let oneStatementFrom = 12

    /// Earlier checksums of files that were rewritten only to make each statement safe to run again
    /// (`CREATE TABLE IF NOT EXISTS`, `ADD COLUMN IF NOT EXISTS`, `DROP INDEX IF EXISTS`): a
    /// database that applied the earlier text has the same schema, and is not refused as changed.
    static let rewrittenFiles: [Int: Set<String>] = [
        1: ["075a9b84984176b6689fa0f0df41e0aced1adca59b34706932bc83d065647599"],
        2: ["4b52786e0d8ccbd2224009c1e763bdb6aab88b8dff70ec55ccbafdfeeb5f7d95"],
        3: ["10370185e66f2d49bf5c3ab742ff852e45f28fbf75762af47c56056c2a762b80"],
        4: ["1ebbe43d63e4624f49e7e108e63091f3ee8dd59895aad7db8a79cb6be677b6a1"],
        5: ["13fe5f7cff5b8621247dff6af7c2218c3186718c0d2958c00e68d9ceb699d55a"],
        6: ["fcda3c04ff096d0af68f2a4d28148ebcd09ed8319b8804ada592aa61dcfbe687"],
        7: ["b8d7c4c708ea6ca4f83d957da6e319facef7adf5a1ab913097a0b7187450bc21"],
    ]

    /// The statements of a migration's text, each without its `;` and trimmed: split at each `;`
    /// outside quotes ('…', "…", `…`) and comments (`-- ` and `#` to the end of the line, left out;
    /// `/* … */`, kept), leaving out empty statements.
    package static func statements(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var quote: Character?
        var chars = Array(sql)[...]
        while let char = chars.popFirst() {
            if let open = quote {
                current.append(char)
                if char == "\\" && open != "`", let escaped = chars.popFirst() {
                    current.append(escaped)
                } else if char == open {
                    quote = nil
                }
                continue
            }
            switch char {
            case "'", "\"", "`":
                quote = char
                current.append(char)
            case "-" where chars.first == "-" && (chars.dropFirst().first.map { $0 == " " || $0 == "\t" || $0 == "\n" } ?? true),
                "#":
                while let next = chars.first, next != "\n" { chars.removeFirst() }
            case "/" where chars.first == "*":
                // Kept as written (the server runs an executable `/*! … */`, which `unrepeatable`
                // refuses); only its `;` do not split.
                current.append("/")
                while let next = chars.popFirst() {
                    current.append(next)
                    if next == "*" && chars.first == "/" {
                        current.append(chars.removeFirst())
                        break
                    }
                }
            case ";":
                statements.append(current)
                current = ""
            default:
                current.append(char)
            }
        }
        statements.append(current)
        return statements.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    /// Why `statement` could fail when run a second time after it completed, or nil: DDL that
    /// creates or drops without its `IF [NOT] EXISTS` form, or renames. (Other statements, such as
    /// an `INSERT IGNORE … SELECT`, must be written to be run again; the migration-kill check of the
    /// end-to-end tests runs every file again after each statement.)
    package static func unrepeatable(_ written: String) -> String? {
        if written.contains("/*!") || written.contains("/*M!") {
            return "an executable comment (/*! … */) is not checked: write the statement plainly"
        }
        // Read without its comments.
        let statement = written.replacing(/\/\*.*?\*\//.dotMatchesNewlines(), with: " ")
        let words = statement.uppercased().split(whereSeparator: { $0.isWhitespace || "(),".contains($0) }).map(String.init)
        func contains(_ phrase: [String], in words: ArraySlice<String>) -> Bool {
            words.indices.contains { words[$0...].starts(with: phrase) }
        }
        guard let first = words.first else { return nil }
        switch first {
        case "CREATE" where words.contains(where: { ["TRIGGER", "PROCEDURE", "FUNCTION", "EVENT"].contains($0) }):
            return "a stored program's body holds statements of its own, which a migration file cannot split"
        case "CREATE":
            if words.dropFirst().starts(with: ["OR", "REPLACE"]) { return nil }
            guard let kind = words.firstIndex(where: { ["TABLE", "INDEX", "VIEW", "SEQUENCE"].contains($0) }) else { return nil }
            return words[(kind + 1)...].starts(with: ["IF", "NOT", "EXISTS"])
                ? nil : "CREATE \(words[kind]) without IF NOT EXISTS cannot run again"
        case "DROP":
            return words.dropFirst(2).starts(with: ["IF", "EXISTS"]) ? nil : "DROP without IF EXISTS cannot run again"
        case "RENAME":
            return "RENAME cannot run again: copy into a new table instead"
        case "ALTER":
            for clause in Migrator.clauses(statement.uppercased()) {
                let parts = clause.split(whereSeparator: \.isWhitespace).map(String.init)
                // The clause's head: up to its first parenthesis (a column list or a type's size).
                let head = parts.prefix(while: { !$0.hasPrefix("(") && !$0.contains("(") })
                switch parts.first {
                case "ADD" where !contains(["IF", "NOT", "EXISTS"], in: head):
                    return "ALTER TABLE … ADD without IF NOT EXISTS cannot run again: \(clause)"
                case "DROP" where !contains(["IF", "EXISTS"], in: head), "CHANGE" where !contains(["IF", "EXISTS"], in: head):
                    return "ALTER TABLE … \(parts[0]) without IF EXISTS cannot run again: \(clause)"
                case "RENAME":
                    return "ALTER TABLE … RENAME cannot run again: \(clause)"
                default:
                    continue
                }
            }
            return nil
        default:
            return nil
        }
    }

    /// The clauses of an ALTER TABLE after its table name: split at commas outside parentheses.
    private static func clauses(_ statement: String) -> [String] {
        let body = statement.split(whereSeparator: \.isWhitespace).dropFirst(3).joined(separator: " ")
        var clauses: [String] = []
        var current = ""
        var depth = 0
        for char in body {
            switch char {
            case "(": depth += 1
            case ")": depth -= 1
            case "," where depth == 0:
                clauses.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
                continue
            default: break
            }
            current.append(char)
        }
        clauses.append(current.trimmingCharacters(in: .whitespaces))
        return clauses
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

        if try !tableExists("schema_migrations", on: connection) { try connection.run(Migrator.createTable) }
        if try !tableExists("schema_migrations_progress", on: connection) { try connection.run(Migrator.createProgressTable) }
        let applied = try applied(on: connection)
        try verify(applied: applied)
        var progress: [Int: (checksum: String, done: Int)] = [:]
        for row in try connection.query("SELECT version, checksum, statements_done FROM schema_migrations_progress") {
            progress[try row.decode(column: "version")] = (try row.decode(column: "checksum"), try row.decode(column: "statements_done"))
        }
        var done: [Migration] = []
        for migration in migrations where applied[migration.version] == nil {
            let statements = migration.statements
            var next = 0
            if let stopped = progress[migration.version] {
                guard stopped.checksum == migration.checksum else {
                    throw MigrationError(problems: [
                        "\(migration.fileName) changed after a run applied \(stopped.done) of its statements and stopped: "
                            + "restore the file that run had, and run again"
                    ])
                }
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
                    try connection.run(statements[next], inSession: lease.session)
                } catch {
                    throw MigrationError(problems: [
                        "\(migration.fileName) failed at statement \(next + 1) of \(statements.count): \(String(reflecting: error))"
                    ])
                }
                next += 1
                if next < statements.count {
                    try Migrator.retryingAborts {
                        _ = try connection.execute(
                            """
                            INSERT INTO schema_migrations_progress (version, checksum, statements_done) VALUES (?, ?, ?)
                            ON DUPLICATE KEY UPDATE checksum = VALUES(checksum), statements_done = VALUES(statements_done)
                            """, migration.version, migration.checksum, next)
                    }
                    log("  \(migration.fileName): statement \(next) of \(statements.count) applied")
                }
            }
            // The file's record and the end of its progress, in one commit, in the lease's session.
            try lease.renew(on: connection)
            try Migrator.retryingAborts {
                try connection.transaction {
                    _ = try connection.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)",
                        migration.version, migration.name, migration.checksum)
                    _ = try connection.execute("DELETE FROM schema_migrations_progress WHERE version = ?", migration.version)
                }
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
            if !migration.matches(recorded: checksum) {
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

    /// How far a file of several statements got: its checksum, and how many statements completed.
    /// The row goes when the file is recorded in `schema_migrations`.
    private static let createProgressTable = """
        CREATE TABLE IF NOT EXISTS schema_migrations_progress (
            version INT UNSIGNED NOT NULL PRIMARY KEY,
            checksum CHAR(64) NOT NULL,
            statements_done INT UNSIGNED NOT NULL,
            updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
        ) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin
        """
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
                // Created only when missing, and once: on a Galera cluster even a CREATE TABLE IF NOT
                // EXISTS is replicated in total order and aborts another node's statements on the
                // table, such as the running migration's renewal of its lease (50_galera.sh saw it).
                // Two runs on a new database can both find it missing: the running run's statements
                // on the table are tried again when aborted (`retryingAborts`).
                if !tableReady {
                    try prepareTable(on: connection)
                    tableReady = true
                }
                if try take(holder: holder, on: connection, log: log) {
                    return MigrationLease(holder: holder, session: connection.session)
                }
            } catch let error as MariaDBError where error.code == .deadlock {
                // Another node's run changed the row, or its DDL aborted this statement: try again.
            }
            guard Date() < deadline else { throw MigrationError(problems: ["another migration run holds the lock"]) }
            // Often: a stopped run's session leaves the process list moments after its client died.
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Creates the table when it is missing, and adds the holder's session to one made before
    /// runs recorded it.
    private static func prepareTable(on connection: Connection) throws {
        if try !tableExists("schema_migrations_lock", on: connection) {
            try connection.run(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations_lock (
                    id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
                    holder CHAR(32) NULL,
                    expires_at DATETIME(3) NOT NULL,
                    \(sessionColumns)
                ) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin
                """)
        } else if try connection.query(
            """
            SELECT 1 FROM information_schema.COLUMNS
            WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations_lock' AND COLUMN_NAME = 'session_holder'
            """
        ).isEmpty {
            let added = sessionColumns.split(separator: ",\n").map { "ADD COLUMN IF NOT EXISTS " + $0.trimmingCharacters(in: .whitespaces) }
            try connection.run("ALTER TABLE schema_migrations_lock " + added.joined(separator: ", "))
        }
    }

    /// The holder's session: which holder wrote it (a run of an older siwa takes the lease without
    /// it, leaving another holder's), its server (user, host, port, data directory), its connection
    /// id there, and when it took the lease.
    private static let sessionColumns = """
        session_holder CHAR(32) NULL,
        session_server VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        session_connection BIGINT UNSIGNED NULL,
        taken_at DATETIME(3) NULL
        """

    /// This connection's server, as `session_server` names it.
    private static let serverIdentity =
        "CONCAT(SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '@', @@hostname, ':', @@port, ':', @@datadir)"

    /// One attempt: creates the row if needed, then takes it when it is free, expired, or held by
    /// a session that has ended on this server.
    private static func take(holder: String, on connection: Connection, log: (String) -> Void) throws -> Bool {
        _ = try connection.execute("INSERT IGNORE INTO schema_migrations_lock (id, holder, expires_at) VALUES (1, NULL, UTC_TIMESTAMP(3))")
        guard
            let row = try connection.query(
                """
                SELECT holder, expires_at < UTC_TIMESTAMP(3) AS expired, session_connection,
                    session_holder <=> holder AND session_server <=> \(serverIdentity) AS this_server,
                    taken_at < UTC_TIMESTAMP(3) - INTERVAL (SELECT VARIABLE_VALUE + 1 FROM information_schema.GLOBAL_STATUS
                        WHERE VARIABLE_NAME = 'UPTIME') SECOND AS before_restart
                FROM schema_migrations_lock WHERE id = 1
                """
            ).first
        else { return false }
        let current: String? = try row.decode(column: "holder")
        let expired: Bool = try row.decode(column: "expired")
        var free = current == nil || expired
        if !free, try row.decode(Bool?.self, column: "this_server") == true, let id: UInt64 = try row.decode(column: "session_connection") {
            // A session absent from the process list has ended, and with it everything it ran; a
            // lease taken before the server last started was held by a session that ended then (its
            // id may since name another session).
            let restarted = try row.decode(Bool?.self, column: "before_restart") == true
            // Only a process list that shows this session can tell that another session is gone.
            let ended =
                try restarted
                || (connection.query("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").count == 1
                    && connection.query("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ?", id).isEmpty)
            if ended {
                log("taking over the lease of a run that stopped (its connection \(id) has ended)")
                free = true
            }
        }
        guard free else { return false }
        let taken = try connection.execute(
            """
            UPDATE schema_migrations_lock SET holder = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND,
                session_holder = ?, session_server = \(serverIdentity), session_connection = CONNECTION_ID(), taken_at = UTC_TIMESTAMP(3)
            WHERE id = 1 AND holder <=> ?
            """, holder, duration, holder, current)
        return taken.affectedRows == 1
    }

    /// Extends the lease by `duration` from now.
    /// - Throws: `MigrationError` when it expired and another run took it, or when the session that
    ///   took it was lost (a reconnected connection is another session).
    func renew(on connection: Connection) throws {
        guard connection.session == session else {
            throw MigrationError(problems: ["the connection holding the migration lock was lost; run siwa migrate again"])
        }
        let held: Bool? = try Migrator.retryingAborts {
            _ = try connection.execute(
                """
                UPDATE schema_migrations_lock SET expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
                WHERE id = 1 AND holder = ? AND session_connection = CONNECTION_ID()
                """, MigrationLease.duration, holder)
            // Read back rather than counted: an update within the same millisecond changes no row.
            return try connection.query(
                "SELECT holder <=> ? AND session_connection <=> CONNECTION_ID() AS held FROM schema_migrations_lock WHERE id = 1", holder
            ).first?.decode(column: "held")
        }
        if held != true { throw MigrationError(problems: ["the migration lock expired and another run took it"]) }
    }

    /// Gives the lease up (best effort: a run waiting on the same server takes it over once this
    /// session ends, one on another server when it expires). Only in the session that took it: a
    /// run whose session was lost may have left a statement running on the server, and the lease
    /// stays with that session until the server has ended it.
    func release(on connection: Connection) {
        guard connection.session == session else { return }
        _ = try? Migrator.retryingAborts {
            try connection.execute(
                "UPDATE schema_migrations_lock SET holder = NULL, session_holder = NULL, session_connection = NULL WHERE id = 1 AND holder = ?",
                holder)
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
