package import MariaDB

/// The statements of a migration run: its bookkeeping (`schema_migrations`, which files are
/// applied; `schema_migrations_progress`, how far a file of several statements got) and the lease
/// in the one row of `schema_migrations_lock`. The run that uses them, and decides when to wait,
/// take the lease over or give up, is `MigrationRunner` (in `Identity`; docs/OPERATIONS.md,
/// "Migrations").
package enum MigrationStatements {
    /// The applied versions and their checksums; none when `schema_migrations` does not exist yet.
    /// It only reads: `siwa doctor` and `siwa migrate --status` change nothing, not even by DDL
    /// (which a Galera cluster replicates in total order, aborting other nodes' statements on the table).
    package static func applied(on connection: Connection) throws -> [Int: String] {
        guard try tableExists("schema_migrations", on: connection) else { return [:] }
        var applied: [Int: String] = [:]
        for row in try connection.query("SELECT version, checksum FROM schema_migrations") {
            applied[try row.decode(column: "version")] = try row.decode(String.self, column: "checksum")
        }
        return applied
    }

    /// Creates `schema_migrations` and `schema_migrations_progress` when they are missing (only
    /// then: see `prepareLockTable`).
    package static func createBookkeepingTables(on connection: Connection) throws {
        if try !tableExists("schema_migrations", on: connection) { try connection.run(createTable) }
        if try !tableExists("schema_migrations_progress", on: connection) { try connection.run(createProgressTable) }
        // Added for batched files; a table made before them lacks it.
        let batchColumn = try connection.query(
            """
            SELECT 1 FROM information_schema.columns
            WHERE table_schema = DATABASE() AND table_name = 'schema_migrations_progress' AND column_name = 'batch_next'
            """)
        if batchColumn.isEmpty {
            try connection.run("ALTER TABLE schema_migrations_progress ADD COLUMN IF NOT EXISTS batch_next BIGINT UNSIGNED NULL")
        }
    }

    /// How far each file of several statements, or of batches, got in a run that stopped: its
    /// checksum then, how many of its statements completed, and where its next batch begins.
    package static func progress(on connection: Connection) throws -> [Int: (checksum: String, done: Int, batchNext: UInt64?)] {
        var progress: [Int: (checksum: String, done: Int, batchNext: UInt64?)] = [:]
        for row in try connection.query("SELECT version, checksum, statements_done, batch_next FROM schema_migrations_progress") {
            progress[try row.decode(column: "version")] = (
                try row.decode(column: "checksum"), try row.decode(column: "statements_done"), try row.decode(column: "batch_next")
            )
        }
        return progress
    }

    /// Records that the batches of `migration` before `next` (a value of its batch column) completed.
    package static func recordBatch(of migration: Migration, next: UInt64, on connection: Connection) throws {
        _ = try connection.execute(
            """
            INSERT INTO schema_migrations_progress (version, checksum, statements_done, batch_next) VALUES (?, ?, 0, ?)
            ON DUPLICATE KEY UPDATE checksum = VALUES(checksum), batch_next = VALUES(batch_next)
            """, migration.version, migration.checksum, next)
    }

    /// The first value of the batch's column at or after `from` (from the start when nil); nil
    /// when no row is left.
    package static func batchStart(_ batch: Migration.Batch, from: UInt64?, on connection: Connection) throws -> UInt64? {
        // Identifiers checked by `Migration.batch`: lowercase letters, digits and underscores.
        try connection.query(
            "SELECT MIN(\(raw: batch.column)) AS first FROM \(raw: batch.table) WHERE \(raw: batch.column) >= \(from ?? 0)"
        ).first?.decode(column: "first")
    }

    /// The first value of the batch's column after the batch that begins at `from`: the value
    /// `batch.rows` rows on, in the column's index order; past the last row, one more than the
    /// largest value. A batch holds at least every row of its first value.
    package static func batchEnd(_ batch: Migration.Batch, from: UInt64, on connection: Connection) throws -> UInt64 {
        // Identifiers checked by `Migration.batch`: lowercase letters, digits and underscores.
        let column: SQL = "\(raw: batch.column)"
        let table: SQL = "\(raw: batch.table)"
        let end: UInt64? = try connection.query(
            "SELECT \(column) AS bound FROM \(table) WHERE \(column) >= \(from) ORDER BY \(column) LIMIT 1 OFFSET \(batch.rows)"
        ).first?.decode(column: "bound")
        if let end, end > from { return end }
        let next: UInt64? = try connection.query(
            "SELECT MIN(\(column)) AS bound FROM \(table) WHERE \(column) > \(from)"
        ).first?.decode(column: "bound")
        if let next, end != nil { return next }
        let last: UInt64? = try connection.query("SELECT MAX(\(column)) AS bound FROM \(table)").first?.decode(column: "bound")
        return max(last ?? from, from) + 1
    }

    /// Records that the first `done` statements of `migration` completed.
    package static func recordProgress(of migration: Migration, done: Int, on connection: Connection) throws {
        _ = try connection.execute(
            """
            INSERT INTO schema_migrations_progress (version, checksum, statements_done) VALUES (?, ?, ?)
            ON DUPLICATE KEY UPDATE checksum = VALUES(checksum), statements_done = VALUES(statements_done)
            """, migration.version, migration.checksum, done)
    }

    /// Records `migration` as applied and ends its progress, in one commit.
    package static func recordApplied(_ migration: Migration, on connection: Connection) throws {
        try connection.transaction {
            _ = try connection.execute(
                "INSERT INTO schema_migrations (version, name, checksum) VALUES (?, ?, ?)", migration.version, migration.name,
                migration.checksum)
            _ = try connection.execute("DELETE FROM schema_migrations_progress WHERE version = ?", migration.version)
        }
    }

    private static let createTable: SQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version INT UNSIGNED NOT NULL PRIMARY KEY,
            name VARCHAR(255) NOT NULL,
            checksum CHAR(64) NOT NULL,
            applied_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3)
        ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin
        """

    /// How far a file of several statements got: its checksum, and how many statements completed.
    /// The row goes when the file is recorded in `schema_migrations`.
    private static let createProgressTable: SQL = """
        CREATE TABLE IF NOT EXISTS schema_migrations_progress (
            version INT UNSIGNED NOT NULL PRIMARY KEY,
            checksum CHAR(64) NOT NULL,
            statements_done INT UNSIGNED NOT NULL,
            batch_next BIGINT UNSIGNED NULL,
            updated_at TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3)
        ) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin
        """

    // MARK: - The lease

    /// The lease's row as one attempt to take it reads it.
    package struct LockRow: Sendable, Equatable {
        /// The holder, nil when the lease is free.
        package var holder: String?
        /// Whether the lease has expired.
        package var expired: Bool
        /// The server connection id of the session that took it, when recorded.
        package var sessionConnection: UInt64?
        /// Whether that session was on this connection's server (nil when unknown).
        package var onThisServer: Bool?
        /// Whether it was taken before this server last started (nil when unknown).
        package var takenBeforeRestart: Bool?
    }

    /// Creates `schema_migrations_lock` when it is missing, and adds the holder's session to one
    /// made before runs recorded it. Only when missing: on a Galera cluster even a CREATE TABLE IF
    /// NOT EXISTS is replicated in total order and aborts another node's statements on the table,
    /// such as the running migration's renewal of its lease (50_galera.sh saw it).
    package static func prepareLockTable(on connection: Connection) throws {
        if try !tableExists("schema_migrations_lock", on: connection) {
            try connection.run(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations_lock (
                    id TINYINT UNSIGNED NOT NULL PRIMARY KEY,
                    holder CHAR(32) NULL,
                    expires_at DATETIME(3) NOT NULL,
                    \(SQL.joined(sessionColumns, separator: ",\n"))
                ) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin
                """)
        } else if try connection.query(
            """
            SELECT 1 FROM information_schema.COLUMNS
            WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations_lock' AND COLUMN_NAME = 'session_holder'
            """
        ).isEmpty {
            let added = sessionColumns.map { "ADD COLUMN IF NOT EXISTS \($0)" as SQL }
            try connection.run("ALTER TABLE schema_migrations_lock \(SQL.joined(added, separator: ", "))")
        }
    }

    /// The holder's session: which holder wrote it (a run of an older siwa takes the lease without
    /// it, leaving another holder's), its server (user, host, port, data directory), its connection
    /// id there, and when it took the lease.
    private static let sessionColumns: [SQL] = [
        "session_holder CHAR(32) NULL",
        "session_server VARCHAR(512) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL",
        "session_connection BIGINT UNSIGNED NULL",
        "taken_at DATETIME(3) NULL",
    ]

    /// This connection's server, as `session_server` names it.
    private static let serverIdentity: SQL =
        "CONCAT(SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '@', @@hostname, ':', @@port, ':', @@datadir)"

    /// The lease's row, created (free) when missing.
    package static func lockRow(on connection: Connection) throws -> LockRow? {
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
        else { return nil }
        return LockRow(
            holder: try row.decode(column: "holder"), expired: try row.decode(column: "expired"),
            sessionConnection: try row.decode(column: "session_connection"), onThisServer: try row.decode(column: "this_server"),
            takenBeforeRestart: try row.decode(column: "before_restart"))
    }

    /// Whether the server session `id` has left this server's process list. Only a process list
    /// that shows this connection's own session can tell that another session is gone.
    package static func sessionEnded(_ id: UInt64, on connection: Connection) throws -> Bool {
        try connection.query("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").count == 1
            && connection.query("SELECT 1 FROM information_schema.PROCESSLIST WHERE ID = ?", id).isEmpty
    }

    /// Takes the lease for `holder` in this connection's session for `duration` seconds, if
    /// `current` still holds it (nil: free).
    /// - Returns: whether it was taken.
    package static func takeLock(holder: String, duration: Int, replacing current: String?, on connection: Connection) throws -> Bool {
        try connection.execute(
            """
            UPDATE schema_migrations_lock SET holder = ?, expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND,
                session_holder = ?, session_server = \(serverIdentity), session_connection = CONNECTION_ID(), taken_at = UTC_TIMESTAMP(3)
            WHERE id = 1 AND holder <=> ?
            """, holder, duration, holder, current
        ).affectedRows == 1
    }

    /// Extends `holder`'s lease, held in this connection's session, to `duration` seconds from now.
    /// - Returns: whether the lease is still `holder`'s in this session (read back rather than
    ///   counted: an update within the same millisecond changes no row); nil without the row.
    package static func renewLock(holder: String, duration: Int, on connection: Connection) throws -> Bool? {
        _ = try connection.execute(
            """
            UPDATE schema_migrations_lock SET expires_at = UTC_TIMESTAMP(3) + INTERVAL ? SECOND
            WHERE id = 1 AND holder = ? AND session_connection = CONNECTION_ID()
            """, duration, holder)
        return try connection.query(
            "SELECT holder <=> ? AND session_connection <=> CONNECTION_ID() AS held FROM schema_migrations_lock WHERE id = 1", holder
        ).first?.decode(column: "held")
    }

    /// Frees `holder`'s lease.
    package static func releaseLock(holder: String, on connection: Connection) throws {
        _ = try connection.execute(
            "UPDATE schema_migrations_lock SET holder = NULL, session_holder = NULL, session_connection = NULL WHERE id = 1 AND holder = ?",
            holder)
    }

    /// Whether the connection's database has the table `name`, read without touching the table.
    private static func tableExists(_ name: String, on connection: Connection) throws -> Bool {
        try !connection.query(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?", name
        ).isEmpty
    }
}
