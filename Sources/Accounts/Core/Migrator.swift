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

    /// How a file that changes the rows of a large table runs: its one statement once per batch of
    /// `rows` rows of `table`, taken in the order of `column` (the leading column of an index),
    /// with the batch's bounds in the session variables `@siwa_batch_from` (included) and
    /// `@siwa_batch_to` (excluded). Declared by a line `-- batched: TABLE.COLUMN ROWS` of the file.
    package struct Batch: Sendable, Equatable {
        package var table: String
        package var column: String
        package var rows: Int
    }

    /// The file's batch declaration; nil when it runs its statements once each.
    package var batch: Batch? {
        for line in sql.split(separator: "\n") {
            guard let match = line.wholeMatch(of: /--\s*batched:\s*([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\s+([0-9]{1,7})\s*/),
                let rows = Int(match.3), rows > 0
            else { continue }
            return Batch(table: String(match.1), column: String(match.2), rows: rows)
        }
        return nil
    }

    /// Whether `recorded` is this file's checksum, or that of an earlier text of it that changed
    /// nothing it makes (`Migrator.rewrittenFiles`).
    func matches(recorded: String) -> Bool {
        recorded == checksum || Migrator.rewrittenFiles[version]?.contains(recorded) == true
    }
}

/// Problems that stop `siwa migrate` before it changes anything.
package struct MigrationError: Error, CustomStringConvertible {
    package let problems: [String]

    /// - Parameter problems: each problem, a line of its own in the description.
    package init(problems: [String]) {
        self.problems = problems
    }

    package var description: String { "migrations refused:\n" + problems.map { "  - \($0)" }.joined(separator: "\n") }
}

/// The migration files, `sql/NNNN_name.sql`, read and checked: each statement must be safe to run
/// again after itself, since a run that was killed goes on from the first statement it did not
/// record (docs/OPERATIONS.md, "Migrations"); and what a database has applied, checked against
/// them. `MigrationRunner` (in `Identity`) applies them, with `MigrationStatements`.
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
                if migration.version >= Migrator.nonLockingFrom, let reason = Migrator.locking(statement, batch: migration.batch) {
                    problems.append("\(migration.fileName): \(reason)")
                }
            }
            if migration.batch != nil && statements.count != 1 {
                problems.append("\(migration.fileName): a batched file holds one statement, found \(statements.count)")
            }
            if migration.sql.contains("batched:") && migration.batch == nil {
                problems.append("\(migration.fileName): a batch is declared by a line `-- batched: TABLE.COLUMN ROWS`")
            }
        }
        if !problems.isEmpty { throw MigrationError(problems: problems) }
        self.migrations = migrations.sorted { $0.version < $1.version }
    }

    /// The first version held to one statement per file (the earlier files were applied as they are).
    package static let oneStatementFrom = 12

    /// The first version held to statements that leave a large table writable while they run
    /// (`locking`): the earlier files were applied as they are.
    package static let nonLockingFrom = 20

    /// Tables that stay small whatever the number of users: a statement on them may lock them.
    package static let smallTables: Set<String> = [
        "id_blocks", "schema_migrations", "schema_migrations_progress", "schema_migrations_lock",
    ]

    /// Why `statement` could keep sign-ins from writing to a large table while it runs, or nil:
    /// an `ALTER TABLE` or `CREATE INDEX` without `LOCK=NONE` (with it, MariaDB refuses the
    /// statement when it cannot run it without blocking writes, instead of blocking them), or an
    /// `INSERT`, `REPLACE`, `UPDATE` or `DELETE` that is not run in batches (`Migration.Batch`), which
    /// would change every row of the table in one transaction.
    package static func locking(_ written: String, batch: Migration.Batch?) -> String? {
        let statement = written.replacing(/\/\*.*?\*\//.dotMatchesNewlines(), with: " ")
        let words = statement.split(whereSeparator: { $0.isWhitespace || "(),;".contains($0) }).map(String.init)
        let upper = words.map { $0.uppercased() }
        guard let first = upper.first else { return nil }
        /// The word after the first of `keywords` (and an IF [NOT] EXISTS), unquoted and without a schema.
        func table(after keywords: Set<String>) -> String? {
            guard var index = upper.firstIndex(where: { keywords.contains($0) }) else { return nil }
            index += 1
            while index < upper.count && ["IF", "NOT", "EXISTS", "IGNORE", "ONLINE"].contains(upper[index]) { index += 1 }
            guard index < words.count else { return nil }
            return words[index].split(separator: ".").last.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "`")).lowercased() }
        }
        let nonLocking = statement.uppercased().filter { !$0.isWhitespace }.contains("LOCK=NONE")
        switch first {
        case "ALTER" where upper.dropFirst().first == "TABLE":
            guard let name = table(after: ["TABLE"]), !smallTables.contains(name), !nonLocking else { return nil }
            return "ALTER TABLE \(name) without LOCK=NONE may block writes to a table that grows with users for as long as it "
                + "runs: add ALGORITHM=INPLACE, LOCK=NONE (or ALGORITHM=INSTANT, LOCK=NONE), and MariaDB refuses it when it "
                + "cannot run it so, or copy the rows into a new table in batches"
        case "CREATE" where upper.contains("INDEX"):
            guard let name = table(after: ["ON"]), !smallTables.contains(name), !nonLocking else { return nil }
            return "CREATE INDEX on \(name) without LOCK=NONE may block writes to a table that grows with users for as long "
                + "as it runs: add ALGORITHM=INPLACE LOCK=NONE"
        case "INSERT", "REPLACE", "UPDATE", "DELETE":
            let keywords: Set<String> = first == "UPDATE" ? ["UPDATE"] : first == "DELETE" ? ["FROM"] : ["INTO"]
            guard let name = table(after: keywords), !smallTables.contains(name) else { return nil }
            guard let batch else {
                return "\(first) on \(name) changes its rows in one transaction, which holds their locks (and, on a Galera "
                    + "cluster, replicates as one write set) for as long as it runs: run it in batches with a line "
                    + "`-- batched: TABLE.COLUMN ROWS` and `@siwa_batch_from <= COLUMN AND COLUMN < @siwa_batch_to` in its WHERE"
            }
            guard statement.contains("@siwa_batch_from") && statement.contains("@siwa_batch_to") else {
                return "a batched statement must read its batch's bounds, @siwa_batch_from and @siwa_batch_to, in its WHERE "
                    + "(of \(batch.table).\(batch.column))"
            }
            return nil
        default:
            return nil
        }
    }

    /// Earlier checksums of files that were rewritten only to make each statement safe to run again
    /// (`CREATE TABLE IF NOT EXISTS`, `ADD COLUMN IF NOT EXISTS`, `DROP INDEX IF EXISTS`) or to run
    /// in batches: a database that applied the earlier text has the same schema and rows, and is
    /// not refused as changed.
    static let rewrittenFiles: [Int: Set<String>] = [
        1: ["075a9b84984176b6689fa0f0df41e0aced1adca59b34706932bc83d065647599"],
        2: ["4b52786e0d8ccbd2224009c1e763bdb6aab88b8dff70ec55ccbafdfeeb5f7d95"],
        3: ["10370185e66f2d49bf5c3ab742ff852e45f28fbf75762af47c56056c2a762b80"],
        4: ["1ebbe43d63e4624f49e7e108e63091f3ee8dd59895aad7db8a79cb6be677b6a1"],
        5: ["13fe5f7cff5b8621247dff6af7c2218c3186718c0d2958c00e68d9ceb699d55a"],
        6: ["fcda3c04ff096d0af68f2a4d28148ebcd09ed8319b8804ada592aa61dcfbe687"],
        7: ["b8d7c4c708ea6ca4f83d957da6e319facef7adf5a1ab913097a0b7187450bc21"],
        // Copied in one statement before they were batched (`Migration.Batch`).
        20: ["f36324f925bd195cfe4cfa9a33e537a799e95d5314ff22a17e8c87a28309dfe4"],
        21: ["f14432feefd65a4af5065ac5630d79da80c45978518da0f40ef90479f16fd35a"],
        22: ["57c3addb330a1deefceda10e2f8dfd1c94e4ad6cffac82dfd1f1a3ce8c77f89b"],
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
        try MigrationStatements.applied(on: connection)
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
}
