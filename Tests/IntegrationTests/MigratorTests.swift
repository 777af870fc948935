import Accounts
import Foundation
import Identity
import MariaDB
import Server
import StrictJSON
import SyncRules
import Testing

@Suite final class MigratorTests {
    let database: TestDatabase
    let directory: String

    init() throws {
        database = try TestDatabase()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("sql-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit {
        database.drop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func write(_ name: String, _ sql: String) throws {
        try sql.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
    }

    @Test("Reading the applied migrations of an empty database finds none and creates nothing (siwa doctor, migrate --status)")
    func readingChangesNothing() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);")
        let migrator = try Migrator(directory: directory)
        #expect(try migrator.applied(on: connection).isEmpty)
        #expect(try connection.query("SHOW TABLES").isEmpty, "no table made by reading")
        _ = try MigrationRunner(migrator).migrate(on: connection)
        #expect(try migrator.applied(on: connection) == [1: migrator.migrations[0].checksum])
    }

    @Test("Each file is applied once, in order, with its checksum; a changed file stops the next run")
    func appliesOnceAndDetectsChanges() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        try write("0002_second.sql", "ALTER TABLE a ADD COLUMN IF NOT EXISTS b INT NULL;")
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);\nINSERT INTO a VALUES (1);")
        let first = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        #expect(first.map(\.fileName) == ["0001_first.sql", "0002_second.sql"])
        #expect(try MigrationRunner(Migrator(directory: directory)).migrate(on: connection).isEmpty)
        let recorded = try connection.query("SELECT version, checksum FROM schema_migrations ORDER BY version")
        #expect(recorded.count == 2)
        #expect(try recorded[0].decode(String.self, at: 1) == Migrator(directory: directory).migrations[0].checksum)

        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);")
        try write("0003_third.sql", "CREATE TABLE IF NOT EXISTS c (id INT PRIMARY KEY);")
        do {
            _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
            Issue.record("a changed migration was accepted")
        } catch let error as MigrationError {
            #expect(error.description.contains("0001_first.sql changed"))
        }
        // Nothing was applied by the refused run.
        #expect(
            try connection.query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'c'")[0]
                .decode(Int.self, at: 0) == 0)
    }

    @Test("A missing applied file or a pending file older than the applied ones is refused")
    func refusesGapsAndMissingFiles() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        try write("0002_second.sql", "CREATE TABLE IF NOT EXISTS b (id INT PRIMARY KEY);")
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);")
        #expect(throws: MigrationError.self) { try MigrationRunner(Migrator(directory: directory)).migrate(on: connection) }
        try FileManager.default.removeItem(atPath: directory + "/0001_first.sql")
        try FileManager.default.removeItem(atPath: directory + "/0002_second.sql")
        #expect(throws: MigrationError.self) { try MigrationRunner(Migrator(directory: directory)).migrate(on: connection) }
    }

    @Test("A database migrated by a newer siwa is refused by an older one, which says it is a downgrade, and nothing runs")
    func refusesDowngrade() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);")
        try write("0002_second.sql", "CREATE TABLE IF NOT EXISTS b (id INT PRIMARY KEY);")
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        // The older siwa's files: the first only, and a pending one of its own.
        try FileManager.default.removeItem(atPath: directory + "/0002_second.sql")
        do {
            _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
            Issue.record("a downgrade was accepted")
        } catch let error as MigrationError {
            #expect(error.problems.count == 1)
            #expect(
                error.description.contains("the database is newer than this siwa: migration 0002 was applied, this siwa knows up to 0001"))
            #expect(error.description.contains("a downgrade is refused"))
        }
        #expect(try Migrator(directory: directory).applied(on: connection).keys.sorted() == [1, 2])
    }

    @Test("Badly named and duplicate-version files are refused before anything runs")
    func badNames() throws {
        try write("1_first.sql", "SELECT 1;")
        try write("0002_Second.sql", "SELECT 1;")
        try write("0003_a.sql", "SELECT 1;")
        try write("0003_b.sql", "SELECT 1;")
        do {
            _ = try Migrator(directory: directory)
            Issue.record("bad names were accepted")
        } catch let error as MigrationError {
            #expect(error.problems.count == 3)
        }
    }

    @Test("The project's own migrations apply to an empty schema")
    func projectMigrations() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        let sql = #filePath.replacingOccurrences(of: "Tests/IntegrationTests/MigratorTests.swift", with: "sql")
        let applied = try MigrationRunner(Migrator(directory: sql)).migrate(on: connection)
        #expect(!applied.isEmpty)
        #expect(try MigrationRunner(Migrator(directory: sql)).migrate(on: connection).isEmpty)
        // Galera replicates rows by primary key: a table without one is not safe on a cluster.
        let withoutPrimaryKey = try connection.query(
            """
            SELECT t.table_name FROM information_schema.tables t
            WHERE t.table_schema = DATABASE() AND t.table_type = 'BASE TABLE' AND NOT EXISTS (
                SELECT 1 FROM information_schema.table_constraints c
                WHERE c.table_schema = t.table_schema AND c.table_name = t.table_name AND c.constraint_type = 'PRIMARY KEY')
            """
        ).map { try $0.decode(String.self, at: 0) }
        #expect(withoutPrimaryKey == [], "tables without a primary key")
        #expect(
            try connection.query("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()")[0].decode(
                Int.self, at: 0) > 10)
    }

    @Test("From version 12 on, a migration file holds one statement; a second is refused before anything runs")
    func oneStatementPerFile() throws {
        try write(
            "0012_two.sql",
            "-- two changes; one too many\nALTER TABLE a ADD COLUMN IF NOT EXISTS b INT NULL;\nALTER TABLE a ADD COLUMN IF NOT EXISTS c INT NULL;\n"
        )
        #expect(throws: MigrationError.self) { try Migrator(directory: self.directory) }
        try write("0012_two.sql", "-- one change\nALTER TABLE a ADD COLUMN IF NOT EXISTS b INT NULL;\n")
        #expect(try Migrator(directory: directory).migrations.count == 1)
    }

    @Test("A run waits for the lease another run holds, takes it once released or expired, and gives up after its wait")
    func lease() throws {
        let connection = try database.connect(multipleStatements: true)
        let other = try database.connect(multipleStatements: true)
        defer {
            connection.close()
            other.close()
        }
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);")
        // Another run's lease, held for a while.
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: other)
        _ = try other.execute(
            "UPDATE schema_migrations_lock SET holder = 'another', expires_at = UTC_TIMESTAMP(3) + INTERVAL 60 SECOND WHERE id = 1")
        #expect(throws: MigrationError.self) { try MigrationRunner(Migrator(directory: self.directory)).migrate(on: connection, wait: 0.5) }
        // An expired lease is taken over.
        _ = try other.execute("UPDATE schema_migrations_lock SET expires_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND WHERE id = 1")
        try write("0002_second.sql", "ALTER TABLE a ADD COLUMN IF NOT EXISTS b INT NULL;")
        #expect(try MigrationRunner(Migrator(directory: directory)).migrate(on: connection, wait: 0.5).map(\.version) == [2])
        #expect(try connection.query("SELECT holder IS NULL FROM schema_migrations_lock WHERE id = 1")[0].decode(Bool.self, at: 0))
    }

    @Test("0008 moves each stored Apple token to its (identity, client id) row, leaves revoked ones behind, and finishes a stopped run")
    func appleTokensPerClient() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        let sql = #filePath.replacingOccurrences(of: "Tests/IntegrationTests/MigratorTests.swift", with: "sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: sql).filter { $0.hasSuffix(".sql") }.sorted()
        for file in files where file < "0008" {
            try FileManager.default.copyItem(atPath: sql + "/" + file, toPath: directory + "/" + file)
        }
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        _ = try connection.execute("INSERT INTO users (id) VALUES (1), (2)")
        _ = try connection.execute(
            """
            INSERT INTO apple_identities (user_id, team_id, sub, audience, apple_refresh_token, apple_refresh_token_key_id,
                apple_refresh_token_client_id, consent_state, next_validation_at)
            VALUES (1, 'TEAM', 'sub.1', 'com.example.app', X'0102', 'k1', 'com.example.app', 'active', '2030-01-01 00:00:00'),
                (2, 'TEAM', 'sub.2', 'com.example.app', X'0304', 'k1', 'com.example.app', 'revoked', NULL)
            """)
        _ = try connection.execute("INSERT INTO sessions (user_id, expires_at) VALUES (1, '2030-01-01 00:00:00')")

        // A run stopped before its last statement (which drops the old columns): the next run finishes it.
        let file = "/0008_apple_tokens_per_client.sql"
        let text = try String(contentsOfFile: sql + file, encoding: .utf8)
        let last = try #require(text.range(of: "ALTER TABLE apple_identities"))
        try connection.run("\(raw: String(text[..<last.lowerBound]))")
        try FileManager.default.copyItem(atPath: sql + file, toPath: directory + file)
        #expect(try MigrationRunner(Migrator(directory: directory)).migrate(on: connection).map(\.version) == [8])
        let rows = try connection.query("SELECT identity_id, client_id, HEX(token), token_key_id, next_validation_at FROM apple_tokens")
        #expect(rows.count == 1, "only the active identity's token")
        #expect(try rows.first?.decode(String.self, at: 1) == "com.example.app" && rows.first?.decode(String.self, at: 2) == "0102")
        #expect(try rows.first?.decode(String.self, at: 4).hasPrefix("2030-01-01") == true, "the validation schedule is kept")
        #expect(try connection.query("SELECT apple_client_id FROM sessions").first?.decode(String?.self, at: 0) == nil)
    }

    @Test("0017 and 0018 (declared collections) keep every existing row: counts and checksums of the synced state before and after")
    func declaredCollectionsKeepRows() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        let sql = #filePath.replacingOccurrences(of: "Tests/IntegrationTests/MigratorTests.swift", with: "sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: sql).filter { $0.hasSuffix(".sql") }.sorted()
        for file in files where file < "0017" {
            try FileManager.default.copyItem(atPath: sql + "/" + file, toPath: directory + "/" + file)
        }
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        for user in 1...200 {
            _ = try connection.execute(
                """
                INSERT INTO users (id, total_xp, current_level, streak_days, last_active_date, profile_version, sync_version)
                VALUES (?, ?, ?, ?, '2026-11-20', ?, ?)
                """, user, user * 10, user % 7, user % 30, user % 5, user % 5 + 3)
            for lesson in 0..<(user % 9) {
                _ = try connection.execute(
                    "INSERT INTO progress (user_id, belief_system_id, lesson_id, status, score, earned_xp, completed_at, version) VALUES (?, 'bs', ?, ?, ?, ?, ?, ?)",
                    user, "l\(lesson)", lesson % 3, lesson * 11, lesson * 3, lesson % 2 == 0 ? Int64(1_795_000_000_000 + lesson) : nil,
                    lesson + 1)
            }
            for achievement in 0..<(user % 4) {
                _ = try connection.execute(
                    "INSERT INTO user_achievements (user_id, achievement_id, progress, completed, completed_at, version) VALUES (?, ?, ?, ?, NULL, 1)",
                    user, "a\(achievement)", achievement * 2, achievement % 2 == 1)
            }
        }
        /// Each table's rows and a checksum of the synced columns, which the migrations must not change.
        func fingerprint() throws -> [String] {
            try [
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', id, total_xp, current_level, streak_days, last_active_date, profile_version, sync_version))) FROM users",
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, belief_system_id, lesson_id, status, score, earned_xp, IFNULL(completed_at, 'n'), version, updated_at))) FROM progress",
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, achievement_id, progress, completed, IFNULL(completed_at, 'n'), version, updated_at))) FROM user_achievements",
            ].map { query in
                let row = try connection.query("\(raw: query)")[0]
                return "\(try row.decode(Int64.self, at: 0)) \(try row.decode(Int64.self, at: 1))"
            }
        }
        let before = try fingerprint()
        #expect(before[0].hasPrefix("200 ") && before[1] != "0 0" && before[2] != "0 0")
        for file in files where file >= "0017" && file < "0019" {
            try FileManager.default.copyItem(atPath: sql + "/" + file, toPath: directory + "/" + file)
        }
        #expect(try MigrationRunner(Migrator(directory: directory)).migrate(on: connection).map(\.version) == [17, 18])
        #expect(try fingerprint() == before)
        #expect(try connection.query("SELECT COUNT(*) FROM users WHERE sync_purged_version = 0")[0].decode(Int64.self, at: 0) == 200)
    }

    @Test(
        "0020-0022 (one sync engine) copy every lesson, achievement and profile of 10,000 users into records the codec reads back as they are stored"
    )
    func builtInSyncBecomesRecords() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        let sql = #filePath.replacingOccurrences(of: "Tests/IntegrationTests/MigratorTests.swift", with: "sql")
        let files = try FileManager.default.contentsOfDirectory(atPath: sql).filter { $0.hasSuffix(".sql") }.sorted()
        for file in files where file < "0020" {
            try FileManager.default.copyItem(atPath: sql + "/" + file, toPath: directory + "/" + file)
        }
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        // 10,000 users: most with a profile (every fifth never synced one), 0 to 8 lessons of every
        // status, with and without a completion time, and 0 to 3 achievements.
        try connection.run(
            """
            INSERT INTO users (id, total_xp, current_level, streak_days, last_active_date, profile_version, sync_version)
            SELECT seq, IF(seq % 5 = 0, 0, seq * 10), IF(seq % 5 = 0, 0, seq % 7), IF(seq % 5 = 0, 0, seq % 30),
                IF(seq % 5 = 0 OR seq % 3 = 0, NULL, DATE('2026-11-20') - INTERVAL seq % 400 DAY), IF(seq % 5 = 0, 0, seq % 4 + 1), seq % 5 + 3
            FROM seq_1_to_10000;
            INSERT INTO progress (user_id, belief_system_id, lesson_id, status, score, earned_xp, completed_at, version)
            SELECT u.seq, CONCAT('bs.', l.seq % 3), CONCAT('lesson:', l.seq), (u.seq + l.seq) % 3, l.seq * 11, u.seq % 1000,
                IF(l.seq % 2 = 0, 1795000000000 + u.seq, NULL), l.seq + 1
            FROM seq_1_to_10000 u JOIN seq_0_to_8 l ON l.seq < u.seq % 9;
            INSERT INTO user_achievements (user_id, achievement_id, progress, completed, completed_at, version)
            SELECT u.seq, CONCAT('a-', a.seq), a.seq * 2, a.seq % 2, IF(a.seq % 2 = 1, 1795000000000 + a.seq, NULL), 1
            FROM seq_1_to_10000 u JOIN seq_0_to_3 a ON a.seq < u.seq % 4;
            """)
        /// Each kind's rows and a checksum of its values, from the old columns and from the records.
        func fingerprints() throws -> (old: [String], new: [String]) {
            func run(_ queries: [SQL]) throws -> [String] {
                try queries.map { query in
                    let row = try connection.query(query)[0]
                    return "\(try row.decode(Int64.self, at: 0)) \(try row.decode(Int64?.self, at: 1) ?? 0)"
                }
            }
            let old = try run([
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, belief_system_id, lesson_id, ELT(status + 1, 'not_started', 'in_progress', 'completed'), score, earned_xp, IFNULL(completed_at, 'n'), version))) FROM progress",
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, achievement_id, progress, IF(completed, 'true', 'false'), IFNULL(completed_at, 'n'), version))) FROM user_achievements",
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', id, total_xp, current_level, streak_days, IFNULL(last_active_date, 'n'), profile_version))) FROM users WHERE profile_version > 0",
            ])
            let new = try run([
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, JSON_VALUE(body, '$.beliefSystemId'), JSON_VALUE(body, '$.lessonId'), JSON_VALUE(body, '$.status'), JSON_VALUE(body, '$.score'), JSON_VALUE(body, '$.earnedXp'), IFNULL(JSON_VALUE(body, '$.completedAt'), 'n'), version))) FROM sync_records WHERE collection = 'progress'",
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, JSON_VALUE(body, '$.achievementId'), JSON_VALUE(body, '$.progress'), JSON_EXTRACT(body, '$.completed'), IFNULL(JSON_VALUE(body, '$.completedAt'), 'n'), version))) FROM sync_records WHERE collection = 'achievements'",
                "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS('|', user_id, JSON_VALUE(body, '$.totalXp'), JSON_VALUE(body, '$.currentLevel'), JSON_VALUE(body, '$.streakDays'), IFNULL(JSON_VALUE(body, '$.lastActiveDate'), 'n'), version))) FROM sync_records WHERE collection = 'profile'",
            ])
            return (old, new)
        }
        let before = try fingerprints().old
        #expect(before[0].hasPrefix("39997 ") && before[1].hasPrefix("15000 ") && before[2].hasPrefix("8000 "), "\(before)")
        for file in files where file >= "0020" && file < "0023" {
            try FileManager.default.copyItem(atPath: sql + "/" + file, toPath: directory + "/" + file)
        }
        #expect(try MigrationRunner(Migrator(directory: directory)).migrate(on: connection).map(\.version) == [20, 21, 22])
        let after = try fingerprints()
        #expect(after.old == before, "the old rows are kept as they were")
        #expect(after.new == before, "every row copied, every value kept")
        // Users whose profile was never synced have no profile record: the empty one stands for it.
        #expect(try connection.query("SELECT COUNT(*) FROM sync_records WHERE collection = 'profile'")[0].decode(Int64.self, at: 0) == 8000)
        // Each record reads with its collection's codec, within its declaration's bounds, and is
        // written back as the very bytes stored, under the key stored: as the engine writes them.
        let wire = SyncWire.builtIn
        var checked = 0
        for row in try connection.query("SELECT collection, item_key, body FROM sync_records") {
            let collection: String = try row.decode(column: "collection")
            let codec = try #require(wire.codecs.first { $0.collection.name == collection })
            let body: [UInt8] = try row.decode(column: "body")
            var reader = JSONReader(body)
            guard case .success(let record) = try codec.read(&reader, path: collection) else {
                Issue.record("\(collection): \(String(decoding: body, as: UTF8.self)) does not read")
                continue
            }
            let key: [UInt8] = try row.decode(column: "item_key")
            #expect(codec.json(record) == body && Array(record.key.utf8) == key)
            checked += 1
        }
        #expect(checked == 39997 + 15000 + 8000)
    }

    @Test("Statements are split at semicolons outside quotes and comments; line comments are left out, block comments kept")
    func splitsStatements() {
        let sql = """
            -- a comment; not a statement
            CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY, note VARCHAR(9) DEFAULT 'x;y'); # another; comment
            /* a block; comment */ INSERT INTO a VALUES (1, "a \\" ; b");
            ;
            """
        #expect(
            Migrator.statements(sql) == [
                "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY, note VARCHAR(9) DEFAULT 'x;y')",
                "/* a block; comment */ INSERT INTO a VALUES (1, \"a \\\" ; b\")",
            ])
    }

    @Test("DDL that cannot run again after itself is refused before anything runs, naming the file and statement")
    func refusesUnrepeatableStatements() throws {
        for refused in [
            "CREATE TABLE a (id INT PRIMARY KEY)", "CREATE UNIQUE INDEX i ON a (id)", "DROP TABLE a", "RENAME TABLE a TO b",
            "ALTER TABLE a ADD COLUMN b INT NULL", "ALTER TABLE a ADD COLUMN IF NOT EXISTS b INT, ADD KEY k (b)",
            "ALTER TABLE a DROP INDEX k", "ALTER TABLE a CHANGE b c INT", "ALTER TABLE a RENAME COLUMN b TO c",
            "CREATE TRIGGER t BEFORE INSERT ON a FOR EACH ROW BEGIN SET NEW.id = 1", "/*!50000 CREATE TABLE a (id INT) */",
            "/* a note; */ CREATE TABLE a (id INT)",
        ] {
            #expect(Migrator.unrepeatable(refused) != nil, "\(refused)")
        }
        for accepted in [
            "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY, b DECIMAL(9, 2))", "CREATE OR REPLACE VIEW v AS SELECT 1",
            "DROP TABLE IF EXISTS a", "ALTER TABLE a ADD COLUMN IF NOT EXISTS b DECIMAL(9, 2) NULL, ADD UNIQUE KEY IF NOT EXISTS k (b)",
            "ALTER TABLE a DROP INDEX IF EXISTS k, MODIFY b INT NOT NULL", "INSERT IGNORE INTO a SELECT 1",
        ] {
            #expect(Migrator.unrepeatable(accepted) == nil, "\(accepted)")
        }
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);\nALTER TABLE a ADD COLUMN b INT NULL;")
        #expect {
            try Migrator(directory: self.directory)
        } throws: {
            "\($0)".contains("0001_first.sql, statement 2: ALTER TABLE … ADD without IF NOT EXISTS")
        }
    }

    @Test("From version 20 on, a statement that would block writes to a large table is refused with the reason and the fix")
    func refusesLockingStatements() throws {
        func problems(_ sql: String) throws -> String? {
            try write("0020_change.sql", sql)
            do {
                _ = try Migrator(directory: directory)
                return nil
            } catch let error as MigrationError {
                return error.description
            }
        }
        #expect(
            try problems("ALTER TABLE sessions ADD KEY IF NOT EXISTS s (device);")?.contains("add ALGORITHM=INPLACE, LOCK=NONE") == true)
        #expect(try problems("ALTER TABLE sessions ADD KEY IF NOT EXISTS s (device), ALGORITHM=INPLACE, LOCK=NONE;") == nil)
        #expect(try problems("ALTER TABLE `users` ADD COLUMN IF NOT EXISTS x INT NULL, ALGORITHM = INSTANT, LOCK = NONE;") == nil)
        #expect(try problems("CREATE INDEX IF NOT EXISTS s ON sessions (device);")?.contains("CREATE INDEX on sessions") == true)
        #expect(try problems("ALTER TABLE id_blocks ADD COLUMN IF NOT EXISTS x INT NULL;") == nil, "a small table may be locked")
        #expect(try problems("UPDATE users SET total_xp = 0;")?.contains("UPDATE on users changes its rows in one transaction") == true)
        #expect(
            try problems("-- batched: users.id 100\nUPDATE users SET total_xp = 0;")?.contains("must read its batch's bounds") == true)
        #expect(
            try problems("-- batched: users.id 100\nUPDATE users SET x = 0 WHERE @siwa_batch_from <= id AND id < @siwa_batch_to;") == nil)
        #expect(try problems("-- batched: Users.id 100\nDELETE FROM users;")?.contains("-- batched: TABLE.COLUMN ROWS") == true)
        // Files before version 20 were applied as they are.
        try FileManager.default.removeItem(atPath: directory + "/0020_change.sql")
        try write("0019_old.sql", "ALTER TABLE sessions ADD KEY IF NOT EXISTS s (device);")
        #expect(try Migrator(directory: directory).migrations.count == 1)
    }

    @Test(
        "A batched file runs its statement once per batch of rows, any run of equal values in one batch, and a stopped run goes on from its next batch"
    )
    func batches() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        // 3 rows for each of the ids 1, 2, 3, 10, 1000 and 8 for id 20: 23 rows, in batches of 7
        // rows whose ends fall between two ids (an id's rows are never split).
        try write(
            "0020_source.sql", "CREATE TABLE IF NOT EXISTS source (id BIGINT UNSIGNED NOT NULL, n INT NOT NULL, PRIMARY KEY (id, n));")
        try write(
            "0021_copy_table.sql",
            "CREATE TABLE IF NOT EXISTS copy (id BIGINT UNSIGNED NOT NULL, n INT NOT NULL, batch BIGINT UNSIGNED, PRIMARY KEY (id, n));")
        // The source's rows exist before the copy runs.
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection, wait: 0.5)
        for id in [1, 2, 3, 10, 20, 1000] {
            for n in 1...(id == 20 ? 8 : 3) { _ = try connection.execute("INSERT INTO source VALUES (\(id), \(n))") }
        }
        try write(
            "0022_copy.sql",
            """
            -- batched: source.id 7
            INSERT INTO copy (id, n, batch) SELECT id, n, @siwa_batch_from FROM source
            WHERE @siwa_batch_from <= id AND id < @siwa_batch_to ON DUPLICATE KEY UPDATE copy.id = copy.id;
            """)
        let migrator = try Migrator(directory: directory)
        let runner = MigrationRunner(migrator)
        var lines: [String] = []
        #expect(try runner.migrate(on: connection, wait: 0.5) { lines.append($0) }.map(\.version) == [22])
        #expect(try connection.query("SELECT COUNT(*) FROM copy")[0].decode(Int.self, at: 0) == 23)
        // From 1, the 8th row is id 3's: ids 1 and 2 (6 rows); from 3, the 8th is id 20's: ids 3
        // and 10; from 20, the 8th is id 20's own: id 20 alone (8 rows); then id 1000, the last.
        let starts = try connection.query("SELECT DISTINCT batch FROM copy ORDER BY batch").map { try $0.decode(Int.self, at: 0) }
        #expect(starts == [1, 3, 20, 1000])
        #expect(lines.contains("  0022_copy.sql: 4 batches of up to 7 rows of source"), "\(lines)")

        // A run stopped after the batches before id 10: only ids from 10 on are copied again.
        _ = try connection.execute("DELETE FROM schema_migrations WHERE version = 22")
        _ = try connection.execute("DELETE FROM copy")
        try MigrationStatements.recordBatch(of: migrator.migrations[2], next: 10, on: connection)
        lines = []
        #expect(try runner.migrate(on: connection, wait: 0.5) { lines.append($0) }.map(\.version) == [22])
        #expect(try connection.query("SELECT DISTINCT id FROM copy ORDER BY id").map { try $0.decode(Int.self, at: 0) } == [10, 20, 1000])
        #expect(lines.contains("  0022_copy.sql: going on from source.id 10 (a run stopped there)"), "\(lines)")
        #expect(try connection.query("SELECT 1 FROM schema_migrations_progress").isEmpty, "the progress ends with the file's record")
    }

    @Test("A run stopped inside a file goes on from the first statement it did not record, which runs again")
    func resumesInsideAFile() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        try write(
            "0001_first.sql",
            """
            CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);
            INSERT INTO a VALUES (1);
            ALTER TABLE a ADD COLUMN IF NOT EXISTS b INT NULL;
            INSERT INTO a (id) VALUES (2);
            """)
        let migrator = try Migrator(directory: directory)
        // A run killed after its first two statements, and after the third had completed but
        // before it was recorded: the record says 2 done.
        _ = try MigrationRunner(migrator).migrate(on: connection, wait: 0.5)
        _ = try connection.execute("DELETE FROM schema_migrations")
        _ = try connection.execute("DELETE FROM a WHERE id = 2")
        _ = try connection.execute(
            "INSERT INTO schema_migrations_progress (version, checksum, statements_done) VALUES (1, ?, 2)", migrator.migrations[0].checksum)
        var lines: [String] = []
        #expect(try MigrationRunner(migrator).migrate(on: connection, wait: 0.5) { lines.append($0) }.map(\.version) == [1])
        #expect(lines.first == "applying 0001_first.sql from statement 3 of 4 (a run stopped there)")
        // The first two statements did not run again (a second INSERT of 1 would have failed).
        #expect(try connection.query("SELECT id FROM a ORDER BY id").map { try $0.decode(Int.self, at: 0) } == [1, 2])
        #expect(try connection.query("SELECT 1 FROM schema_migrations_progress").isEmpty, "the progress ends with the file's record")

        // A file changed since a run stopped inside it is refused.
        _ = try connection.execute("DELETE FROM schema_migrations")
        _ = try connection.execute("INSERT INTO schema_migrations_progress (version, checksum, statements_done) VALUES (1, 'earlier', 2)")
        #expect {
            try MigrationRunner(migrator).migrate(on: connection, wait: 0.5)
        } throws: {
            "\($0)".contains("0001_first.sql changed after a run applied 2 of its statements and stopped")
        }
    }

    @Test("A lease whose session has ended on the server is taken over at once; one whose session lives is waited for")
    func leaseOfAnEndedSessionIsTakenOver() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        try write("0001_first.sql", "CREATE TABLE IF NOT EXISTS a (id INT PRIMARY KEY);")
        _ = try MigrationRunner(Migrator(directory: directory)).migrate(on: connection)
        // Another run's lease, recorded as its session took it, for 5 minutes.
        func leaseHeld(by other: Connection) throws {
            _ = try other.execute(
                """
                UPDATE schema_migrations_lock SET holder = 'another', session_holder = 'another', expires_at = UTC_TIMESTAMP(3) + INTERVAL 300 SECOND,
                    session_server = CONCAT(SUBSTRING_INDEX(CURRENT_USER(), '@', 1), '@', @@hostname, ':', @@port, ':', @@datadir),
                    session_connection = CONNECTION_ID(), taken_at = UTC_TIMESTAMP(3)
                WHERE id = 1
                """)
        }
        try write("0002_second.sql", "ALTER TABLE a ADD COLUMN IF NOT EXISTS b INT NULL;")
        let live = try database.connect(multipleStatements: true)
        defer { live.close() }
        try leaseHeld(by: live)
        #expect(throws: MigrationError.self) { try MigrationRunner(Migrator(directory: self.directory)).migrate(on: connection, wait: 0.5) }

        let stopped = try database.connect(multipleStatements: true)
        try leaseHeld(by: stopped)
        let id = try stopped.query("SELECT CONNECTION_ID()")[0].decode(Int64.self, at: 0)
        stopped.close()
        // The server ends the session a moment after its client went: the run waits until then.
        var lines: [String] = []
        #expect(
            try MigrationRunner(Migrator(directory: directory)).migrate(on: connection, wait: 10) { lines.append($0) }.map(\.version) == [2]
        )
        #expect(lines.first == "taking over the lease of a run that stopped (its connection \(id) has ended)")

        // Written by an older siwa's run (holder without a session of its own): waited for.
        try leaseHeld(by: stopped)
        _ = try connection.execute("UPDATE schema_migrations_lock SET holder = 'older' WHERE id = 1")
        try write("0003_third.sql", "ALTER TABLE a ADD COLUMN IF NOT EXISTS c INT NULL;")
        #expect(throws: MigrationError.self) { try MigrationRunner(Migrator(directory: self.directory)).migrate(on: connection, wait: 0.5) }
    }

    @Test("A statement is sent only in the session that took the lease: a lost connection stops the run, never reopened for it")
    func statementsStayInTheLeaseSession() throws {
        let connection = try database.connect(multipleStatements: true)
        defer { connection.close() }
        let session = connection.session
        try connection.run("DO 1")
        let opened = connection.session
        #expect(opened > session)
        connection.close()
        #expect(throws: MariaDBError.self) { try connection.run("DO 1", inSession: opened) }
        try connection.run("DO 1")
        #expect(connection.session == opened + 1)
    }

    @Test("Files rewritten only to run again are not refused as changed on a database that applied their earlier text")
    func rewrittenFilesAccepted() throws {
        let sql = #filePath.replacingOccurrences(of: "Tests/IntegrationTests/MigratorTests.swift", with: "sql")
        let migrator = try Migrator(directory: sql)
        var applied: [Int: String] = [:]
        for migration in migrator.migrations { applied[migration.version] = migration.checksum }
        applied[2] = "4b52786e0d8ccbd2224009c1e763bdb6aab88b8dff70ec55ccbafdfeeb5f7d95"
        try migrator.verify(applied: applied)
        applied[3] = String(repeating: "0", count: 64)
        #expect(throws: MigrationError.self) { try migrator.verify(applied: applied) }
    }
}
