import Accounts
import Foundation
import Identity
import MariaDB
import Testing

/// Every statement of `Accounts` (all the SQL `siwa serve`, `siwa jobs` and the command line send)
/// read through an index on the tables that grow with users: at ten million users a statement
/// that scans one of them is an outage. The statements are collected, not listed: the migration
/// run and `AccountsTour` call every function of `Accounts` on a connection with a
/// `StatementRecorder`, and the test fails when a call of `connection.query`/`execute`/
/// `executeWithNext`/`executeBatch` in `Sources/Accounts` was never recorded. Each is then
/// explained (`EXPLAIN`, prepared with the values it was sent with) on `RepresentativeRows`.
///
/// A plan fails on a table of `growing` when it reads the whole table (`ALL`) or the whole of one
/// of its indexes (`index`); when it sorts or builds a temporary table of rows it found other than
/// by one key's value (a `range`: a sort of everything due, expired, older...), or of more than
/// `sortedRows` rows; or when its index leaves a tenth of the table or more (more than
/// `sortedRows` rows) to read. docs/TESTING.md, "Statement plans", says how to add an exception.
@Suite struct StatementPlanTests {
    /// The tables whose rows grow with users, sessions or time. A table of the schema must be
    /// here or in `fixedSize`, so that a new one is classified when it is added.
    static let growing: Set<String> = [
        "users", "apple_identities", "user_emails", "sessions", "refresh_tokens", "used_nonces", "web_sign_ins", "apple_revocations",
        "apple_notifications", "apple_tokens", "webhook_events", "webhook_deliveries", "webhook_attempts", "session_revocations",
        "apple_transfers", "link_tokens", "sync_records", "audit_events",
        // The built-in model's tables before 0020-0022 moved their rows to sync_records; no statement uses them.
        "progress", "user_achievements",
    ]

    /// Tables of a few rows whatever the number of users.
    static let fixedSize: Set<String> = [
        "id_blocks", "schema_migrations", "schema_migrations_progress", "schema_migrations_lock",
    ]

    /// More rows than a sort or a temporary table may hold, and than an index may leave to read:
    /// more than one user has in any table (ten at most, here).
    static let sortedRows = 100

    /// A plan that breaks a rule and is accepted, with why: `fragment` is a piece of the
    /// statement's text, `tables` the tables (not their aliases) whose rows of the plan may break
    /// it (the optimizer may scan either side of a join). An exception that no plan needs any more
    /// fails the test, so that the list stays true.
    struct Exception {
        var fragment: String
        var tables: Set<String>
        var why: String
    }

    static let exceptions: [Exception] = [
        Exception(
            fragment: "FROM audit_events WHERE id > ? ORDER BY id DESC LIMIT ?", tables: ["audit_events"],
            why:
                "siwa admin audit: the newest events, read backwards along the primary key; LIMIT stops the read (EXPLAIN counts the range)"
        ),
        Exception(
            fragment: "FROM webhook_attempts a JOIN webhook_events e ON e.id = a.event_id ORDER BY a.id DESC LIMIT ?",
            tables: ["webhook_attempts"],
            why: "siwa webhooks log: the newest attempts, read backwards along the primary key; LIMIT stops the read"),
        Exception(
            fragment: "GROUP BY d.endpoint, d.state", tables: ["webhook_events", "webhook_deliveries"],
            why: "siwa webhooks status, an operator's command: it counts every delivery kept (30 days of events) by endpoint and state"),
        Exception(
            fragment: "WHERE i.team_id = ? AND i.id > ? AND t.identity_id IS NULL ORDER BY i.id LIMIT ?", tables: ["apple_identities"],
            why: "siwa transfer pages through the sending team's identities in id order from its cursor; LIMIT ends each page, "
                + "so a whole run reads the table once"),
        Exception(
            fragment: "AND t.resolved_at IS NULL AND t.identity_id > ? ORDER BY t.identity_id LIMIT ?", tables: ["apple_transfers"],
            why: "siwa transfer pages through the transfers to its team not yet resolved, in id order from its cursor; LIMIT ends each page"
        ),
        Exception(
            fragment: "LIMIT 1 OFFSET ?", tables: ["users", "progress", "user_achievements"],
            why: "siwa migrate finds where a batched file's next batch begins, a batch's rows further along the batch column's "
                + "index (OFFSET): each batch's rows are read once to find its end and once to copy them"),
        Exception(
            fragment: "SELECT token_key_id, COUNT(*) AS sealed FROM (", tables: ["apple_tokens", "apple_revocations"],
            why: "siwa backup and siwa restore count every sealed Apple token by its data key, once a backup: what the restore "
                + "must be able to open"),
        Exception(
            fragment: "ORDER BY source, row_id, client_id LIMIT 1 OFFSET", tables: ["apple_tokens", "apple_revocations"],
            why: "siwa backup and siwa restore read a few sealed tokens of a data key at drawn positions, once a backup, to prove the key"),
        Exception(
            fragment: "SELECT COUNT(*) AS n FROM ",
            tables: [
                "users", "apple_identities", "apple_tokens", "sessions", "refresh_tokens", "sync_records", "webhook_deliveries",
                "apple_revocations",
            ],
            why: "siwa backup and siwa restore count the rows of the main tables, once a backup, for the manifest and the check"),
        Exception(
            fragment: "SELECT DISTINCT i.team_id FROM apple_transfers t", tables: ["apple_transfers"],
            why: "siwa transfer's report: the teams its team receives users from, read from all the transfers to it; "
                + "an operator's command, run a few times per transfer"),
    ]

    @Test("Every statement of Accounts reads the tables that grow with users through an index")
    func everyStatementUsesAnIndex() throws {
        let database = try TestDatabase()
        defer { database.drop() }
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        let recorder = StatementRecorder()
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized

        connection.statementRecorder = recorder
        _ = try MigrationRunner(Migrator(directory: root.appendingPathComponent("sql").path)).migrate(on: connection)
        connection.statementRecorder = nil
        try RepresentativeRows.fill(on: connection)
        connection.statementRecorder = recorder
        try AccountsTour(connection: connection).run(migrationsIn: root.appendingPathComponent("sql").path)
        connection.statementRecorder = nil

        // Every statement was recorded: each call in Sources/Accounts, by its file and line.
        let calls = try Self.statementCalls(in: root.appendingPathComponent("Sources/Accounts"))
        let recorded = Set(recorder.statements.map { "\($0.file):\($0.line)" })
        let missed = calls.subtracting(recorded).sorted()
        #expect(
            missed.isEmpty,
            "statements of Accounts that AccountsTour never sent (call them there): \(missed.joined(separator: ", "))")
        let unseen = recorded.filter { $0.hasPrefix("Accounts/") }.subtracting(calls).sorted()
        #expect(unseen.isEmpty, "recorded calls the scan of Sources/Accounts did not find (fix statementCalls): \(unseen)")

        // Every table is classified.
        let tables: [String] = try connection.query(
            "SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()"
        ).map { try $0.decode(column: "name") }
        let unclassified = Set(tables).subtracting(Self.growing).subtracting(Self.fixedSize)
        #expect(unclassified.isEmpty, "tables neither growing nor fixedSize in StatementPlanTests: \(unclassified.sorted())")
        var sizes: [String: Int] = [:]
        for table in Self.growing where tables.contains(table) {
            sizes[table] = try connection.query("SELECT COUNT(*) AS count FROM \(raw: table)")[0].decode(column: "count")
        }

        var findings: [Finding] = []
        var explained = 0
        var texts = Set<String>()
        for statement in recorder.statements where texts.insert(statement.text).inserted {
            guard let explainable = Self.explainable(statement) else { continue }
            let plan = try connection.query("\(raw: "EXPLAIN " + explainable.text)", binds: explainable.values)
            explained += 1
            if env("SIWA_TEST_PRINT_PLANS") != nil { print(try Self.describe(plan, of: statement)) }
            findings += try Self.findings(in: plan, of: statement, sizes: sizes)
        }
        var used = Set<Int>()
        let unexcused = findings.filter { finding in
            guard let index = Self.exceptions.firstIndex(where: { finding.matches($0) }) else { return true }
            used.insert(index)
            return false
        }
        if !unexcused.isEmpty {
            Issue.record(
                """
                \(unexcused.count) plans read a growing table without an index (of \(explained) statements explained):

                \(unexcused.map(\.description).joined(separator: "\n\n"))
                """)
        }
        let stale = Self.exceptions.indices.filter { !used.contains($0) }.map { Self.exceptions[$0].fragment }
        #expect(stale.isEmpty, "exceptions no plan needs any more (remove them): \(stale)")
        #expect(explained > 100, "only \(explained) statements explained")
        if env("SIWA_TEST_PRINT_PLANS") != nil {
            print(
                "\(calls.count) calls in Sources/Accounts, \(recorder.statements.count) statements recorded "
                    + "(\(texts.count) texts), \(explained) explained, \(findings.count) findings, \(used.count) excepted")
        }
    }

    /// Statements sent from outside `Accounts`, which `everyStatementUsesAnIndex` does not see:
    /// each reads no table. `MariaDB` sends its own too (`SELECT 1`, a Galera node's status, the
    /// session settings, START TRANSACTION and COMMIT), none of a table, and `run` the migrations.
    static let outsideAccounts: Set<String> = [
        "Sources/siwa/Doctor.swift: SELECT @@max_connections AS max_connections"
    ]

    @Test("SQL is sent only from Accounts, but for statements that read no table")
    func statementsLiveInAccounts() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized
        let call = /\.(?:query|execute|executeWithNext|executeBatch)\(\s*"(?<text>[^"]*)/
        var found = Set<String>()
        let files = FileManager.default.enumerator(at: root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            let path = file.path.replacingOccurrences(of: root.path + "/", with: "")
            guard file.pathExtension == "swift", !path.hasPrefix("Sources/Accounts/"), !path.hasPrefix("Sources/MariaDB/") else {
                continue
            }
            for match in try String(contentsOf: file, encoding: .utf8).matches(of: call) {
                found.insert("\(path): \(match.text)")
            }
        }
        #expect(found == Self.outsideAccounts, "statements outside Accounts (move them there, where they are explained)")
    }

    // MARK: - Collecting

    /// The calls that send a statement in the Swift files under `directory`, as `#fileID` and line
    /// (`Accounts/Sessions.swift:123`): the places a `StatementRecorder` records.
    static func statementCalls(in directory: URL) throws -> Set<String> {
        let call = /connection\.(query|execute|executeWithNext|executeBatch)\(/
        var calls = Set<String>()
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where line.contains(call) && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//")
            {
                calls.insert("Accounts/\(file.lastPathComponent):\(index + 1)")
            }
        }
        return calls
    }

    /// The statement as `EXPLAIN` takes it: a read or a change of rows. Of a compound text (a
    /// statement and the check of its outcome, `Nonces.consumeWithNext`), its first statement
    /// and the values of its `?`s. nil for what reads no table's rows to find them.
    static func explainable(_ statement: StatementRecorder.Statement) -> (text: String, values: [Value])? {
        var text = statement.text
        var values = statement.values
        if let end = text.firstIndex(of: ";") {
            text = String(text[..<end])
            values = Array(values.prefix(text.count { $0 == "?" }))
        }
        let start = text.drop(while: \.isWhitespace).prefix(7).uppercased()
        guard ["SELECT", "UPDATE", "DELETE", "INSERT"].contains(where: { start.hasPrefix($0) }) else { return nil }
        // An INSERT of values reads nothing (its unique keys are checked by their indexes).
        if start.hasPrefix("INSERT"), !text.uppercased().contains("SELECT") { return nil }
        // The server's own tables (information_schema) are not the schema's.
        if text.contains("information_schema") { return nil }
        return (text, values)
    }

    // MARK: - Judging

    /// A row of a plan that breaks a rule.
    struct Finding: CustomStringConvertible {
        var statement: StatementRecorder.Statement
        var table: String
        var rule: String
        var plan: String

        func matches(_ exception: Exception) -> Bool {
            exception.tables.contains(table) && oneLine(statement.text).contains(oneLine(exception.fragment))
        }

        var description: String {
            "\(statement.file):\(statement.line): \(table): \(rule)\n  \(oneLine(statement.text))\n  plan: \(plan)"
        }
    }

    static func findings(in plan: [Row], of statement: StatementRecorder.Statement, sizes: [String: Int]) throws -> [Finding] {
        let aliases = Self.aliases(in: statement.text)
        var findings: [Finding] = []
        for row in plan {
            let name = try text(row, "table") ?? ""
            let table = aliases[name] ?? name
            guard let size = sizes[table], try text(row, "select_type") != "INSERT" else { continue }
            let type = try text(row, "type") ?? ""
            let key = try text(row, "key") ?? "none"
            let rows = Int(try text(row, "rows") ?? "") ?? 0
            let extra = try text(row, "Extra") ?? ""
            let shown = "type \(type), key \(key), rows \(rows) of \(size)" + (extra.isEmpty ? "" : ", \(extra)")
            func found(_ rule: String) { findings.append(Finding(statement: statement, table: table, rule: rule, plan: shown)) }
            if type == "ALL" {
                found("reads the whole table")
            } else if type == "index" {
                found("reads the whole of index \(key)")
            } else if extra.contains("Using filesort") || extra.contains("Using temporary"),
                !["system", "const", "eq_ref", "ref"].contains(type) || rows > sortedRows
            {
                found("sorts or gathers \(rows) rows found by a \(type) read (only one user's few rows may be sorted)")
            } else if rows > sortedRows, rows * 10 >= size {
                found("index \(key) leaves \(rows) of \(size) rows to read")
            }
        }
        return findings
    }

    /// The tables of a statement by alias (`FROM sessions s`, `JOIN users u`).
    static func aliases(in text: String) -> [String: String] {
        let named = /(?i)\b(?:FROM|JOIN|UPDATE|INTO)\s+([a-z_]+)\s+(?:AS\s+)?([a-z_]+)\b/
        let keywords: Set<String> = [
            "where", "set", "join", "on", "left", "inner", "group", "order", "limit", "for", "lock", "values", "select", "union",
            "straight_join",
        ]
        var aliases: [String: String] = [:]
        for match in text.matches(of: named) where !keywords.contains(match.2.lowercased()) {
            aliases[String(match.2)] = String(match.1)
        }
        return aliases
    }

    /// A plan as `SIWA_TEST_PRINT_PLANS=1` prints it: the statement, then a line per table.
    static func describe(_ plan: [Row], of statement: StatementRecorder.Statement) throws -> String {
        var lines = ["\(statement.file):\(statement.line): \(oneLine(statement.text))"]
        for row in plan {
            let columns = try ["select_type", "table", "type", "key", "rows", "Extra"].map { "\($0) \(try text(row, $0) ?? "-")" }
            lines.append("    " + columns.joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }

    private static func text(_ row: Row, _ column: String) throws -> String? {
        switch try row.decode(Value.self, column: column) {
        case .null: nil
        case .int(let value): String(value)
        case .uint(let value): String(value)
        case .double(let value): String(value)
        case .text(let value): value
        case .blob(let value): String(decoding: value, as: UTF8.self)
        }
    }
}

/// `text` on one line, each run of white space one space.
func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}
