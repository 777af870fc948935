import Foundation
import MariaDB
import SIWATestSupport
import Testing

@Suite final class ConnectionTests {
    let database: TestDatabase

    init() throws { database = try TestDatabase() }

    deinit { database.drop() }

    private func withTable(_ body: (Connection) throws -> Void) throws {
        let connection = try database.connect()
        defer { connection.close() }
        try connection.run(
            """
            CREATE TABLE items (
                id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(64) NOT NULL UNIQUE,
                score DOUBLE NULL, big BIGINT UNSIGNED NULL, note TEXT NULL, raw VARBINARY(64) NULL,
                flag TINYINT(1) NOT NULL DEFAULT 0, at DATETIME(3) NULL
            ) ENGINE=InnoDB
            """)
        try body(connection)
    }

    @Test("Values round-trip with their types, NULL included, through prepared statements")
    func roundTrip() throws {
        try withTable { connection in
            let inserted = try connection.execute(
                "INSERT INTO items (name, score, big, note, raw, flag, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                "café 🍎", 2.5, UInt64.max, String?.none, [UInt8]([0, 255, 10]), true, "2026-11-21 10:00:00.123")
            #expect(inserted.affectedRows == 1)
            #expect(inserted.lastInsertID == 1)
            let row = try #require(
                try connection.query("SELECT id, name, score, big, note, raw, flag, at FROM items WHERE name = ?", "café 🍎").first)
            #expect(try row.decode(Int.self, at: 0) == 1)
            #expect(try row.decode(String.self, column: "name") == "café 🍎")
            #expect(try row.decode(Double.self, at: 2) == 2.5)
            #expect(try row.decode(UInt64.self, at: 3) == UInt64.max)
            #expect(try row.decode(String?.self, at: 4) == nil)
            #expect(try row.decode([UInt8].self, at: 5) == [0, 255, 10])
            #expect(try row.decode(Bool.self, at: 6))
            #expect(try row.decode(String.self, at: 7) == "2026-11-21 10:00:00.123")
            #expect(throws: MariaDBError(.typeMismatch)) { try row.decode(Int.self, at: 4) }
            #expect(throws: MariaDBError(.typeMismatch)) { try row.decode(Int.self, at: 1) }
        }
    }

    @Test(
        "Interpolated values and IN lists are bound, never run as SQL; statements built alike are prepared once per connection, a list once per padded length"
    )
    func interpolatedStatements() throws {
        try withTable { connection in
            let hostile = "x' OR '1'='1"
            for name in ["a", "b", "c", hostile] {
                _ = try connection.execute("INSERT INTO items (name, score) VALUES (\(name), \(1.5))")
            }
            func prepares() throws -> Int {
                Int(try connection.query("SHOW SESSION STATUS LIKE 'Com_stmt_prepare'")[0].decode(String.self, at: 1)) ?? -1
            }
            let before = try prepares()
            for names in [["a"], ["b", "c"], ["a", "c", "zz"], [hostile], ["x"]] {
                let rows = try connection.query("SELECT name FROM items WHERE name IN (\(list: names)) ORDER BY name")
                #expect(try rows.map { try $0.decode(String.self, at: 0) } == names.filter { $0 != "zz" && $0 != "x" }.sorted())
            }
            #expect(try prepares() - before == 3, "lists of 1, 2 and 3 values padded to 4: three statements")
            #expect(throws: MariaDBError(.misuse)) { try connection.query("SELECT name FROM items WHERE name = \("a") AND id = ?", 1) }
            #expect(throws: MariaDBError(.misuse)) { try connection.run("SELECT \(1)") }
        }
    }

    @Test("A connection nobody closed is closed when it goes away: the server ends its session")
    func deinitCloses() throws {
        let observer = try database.connect()
        defer { observer.close() }
        var connectionID: UInt64 = 0
        do {
            let forgotten = try database.connect()
            connectionID = try #require(try forgotten.query("SELECT CONNECTION_ID()").first?.decode(at: 0))
        }
        let gone = try eventually(within: 10) {
            try observer.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", connectionID).first?.decode(at: 0)
                == Int64(0)
        }
        #expect(gone, "the session \(connectionID) of a connection that went away without close() is still open")
    }

    @Test("A value longer than the column buffer is read completely")
    func longValue() throws {
        try withTable { connection in
            let note = String(repeating: "0123456789", count: 6_000)
            _ = try connection.execute("INSERT INTO items (name, note) VALUES (?, ?)", "long", note)
            let rows = try connection.query("SELECT note, name FROM items")
            #expect(try rows[0].decode(String.self, at: 0) == note)
            #expect(try rows[0].decode(String.self, at: 1) == "long")
        }
    }

    @Test("Server errors map to codes with errno and SQLSTATE")
    func errors() throws {
        try withTable { connection in
            _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "a")
            do {
                _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "a")
                Issue.record("expected a duplicate key error")
            } catch let error as MariaDBError {
                #expect(error.code == .duplicateEntry)
                #expect(error.errno == 1062)
                #expect(error.sqlState == "23000")
                #expect(!error.description.contains("'a'"))
            }
            #expect(throws: MariaDBError(.statementFailed)) { try connection.query("SELEKT 1") }
            #expect(throws: MariaDBError(.misuse)) { try connection.query("SELECT ?", 1, 2) }
            // Strict mode: too long a value is an error, not a silent truncation.
            #expect(throws: MariaDBError(.statementFailed)) {
                try connection.execute("INSERT INTO items (name) VALUES (?)", String(repeating: "x", count: 65))
            }
        }
    }

    @Test("A transaction commits when its body returns and rolls back when it throws")
    func transactions() throws {
        struct Abort: Error {}
        try withTable { connection in
            try connection.transaction {
                _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "kept")
            }
            #expect(throws: Abort.self) {
                try connection.transaction {
                    _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "dropped")
                    throw Abort()
                }
            }
            #expect(throws: MariaDBError(.misuse)) {
                try connection.transaction { try connection.transaction {} }
            }
            let names = try connection.query("SELECT name FROM items ORDER BY name").map { try $0.decode(String.self, at: 0) }
            #expect(names == ["kept"])
        }
    }

    @Test("A batch writes all its rows in one execution: every kind of value, NULLs, and upserts counted as the server counts them")
    func batch() throws {
        try withTable { connection in
            let insert: SQL = "INSERT INTO items (name, score, big, note, raw, flag) VALUES (?, ?, ?, ?, ?, ?)"
            let written = try connection.executeBatch(
                insert,
                rows: [
                    ["café 🍎", 2.5, UInt64.max, "a note", [UInt8]([0, 255]), true],
                    ["plain", Double?.none, UInt64(7), String?.none, [UInt8]?.none, false],
                    ["", -1.0, UInt64?.none, "", [UInt8](), true],
                ])
            #expect(written.affectedRows == 3)
            let rows = try connection.query("SELECT name, score, big, note, raw, flag FROM items ORDER BY id")
            #expect(try rows.map { try $0.decode(String.self, at: 0) } == ["café 🍎", "plain", ""])
            #expect(try rows.map { try $0.decode(Double?.self, at: 1) } == [2.5, nil, -1.0])
            #expect(try rows.map { try $0.decode(UInt64?.self, at: 2) } == [UInt64.max, 7, nil])
            #expect(try rows.map { try $0.decode(String?.self, at: 3) } == ["a note", nil, ""])
            #expect(try rows.map { try $0.decode([UInt8]?.self, at: 4) } == [[0, 255], nil, []])
            #expect(try rows.map { try $0.decode(Bool.self, at: 5) } == [true, false, true])

            // One row updated (2), one inserted (1), one unchanged (0).
            let upserted = try connection.executeBatch(
                "INSERT INTO items (name, flag) VALUES (?, ?) ON DUPLICATE KEY UPDATE flag = VALUES(flag)",
                rows: [["plain", true], ["new", false], ["", true]])
            #expect(upserted.affectedRows == 3)
            let flags = try connection.query("SELECT name, flag FROM items ORDER BY id").map { try $0.decode(Bool.self, at: 1) }
            #expect(flags == [true, true, true, false])
            // The same statement runs singly again after a batch.
            #expect(
                try connection.execute(
                    "INSERT INTO items (name, flag) VALUES (?, ?) ON DUPLICATE KEY UPDATE flag = VALUES(flag)", "single", true
                ).affectedRows == 1)
            #expect(try connection.executeBatch(insert, rows: []).affectedRows == 0)
        }
    }

    @Test("A batch with a failing row fails whole, and its transaction leaves nothing written; misuse is refused before sending")
    func failingBatch() throws {
        try withTable { connection throws in
            #expect(throws: MariaDBError(.duplicateEntry)) {
                try connection.transaction {
                    _ = try connection.executeBatch("INSERT INTO items (name) VALUES (?)", rows: [["a"], ["b"], ["a"]])
                }
            }
            #expect(try count(on: connection) == 0)
            #expect(throws: MariaDBError(.misuse)) { try connection.executeBatch("INSERT INTO items (name) VALUES (?)", rows: [["a", 1]]) }
            #expect(throws: MariaDBError(.misuse)) {
                try connection.executeBatch("INSERT INTO items (name) VALUES (?)", rows: [["a"], [1]])
            }
            #expect(throws: MariaDBError(.misuse)) {
                try connection.executeBatch("INSERT INTO items (name, big) VALUES (?, ?)", rows: [["a", UInt64(1)], ["b", -1]])
            }
            #expect(throws: MariaDBError(.misuse)) { try connection.executeBatch("SELECT name FROM items WHERE name = ?", rows: [["a"]]) }
            #expect(throws: MariaDBError(.misuse)) { try connection.executeBatch("DELETE FROM items", rows: [[]]) }
            #expect(try count(on: connection) == 0)
        }
    }

    /// How many statements `connection`'s session has executed (prepared or not), less the one
    /// that reads the count.
    private func statementsExecuted(on connection: Connection) throws -> Int {
        let rows = try connection.query(
            "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'COM_STMT_EXECUTE'")
        return Int(try rows[0].decode(String.self, at: 0))! - 1
    }

    @Test(
        "Queued writes go with the next statement in one execution: a read sees them, a write returns its own changed rows and id, and the COMMIT sends the rest"
    )
    func queuedWrites() throws {
        try withTable { connection in
            let other = try database.connect()
            defer { other.close() }
            try connection.transaction {
                let before = try statementsExecuted(on: connection)
                try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "a")
                try connection.executeWithNext("INSERT INTO items (name, score) VALUES (?, ?)", "b", 2.5)
                let names = try connection.query("SELECT name FROM items ORDER BY id").map { try $0.decode(String.self, at: 0) }
                #expect(names == ["a", "b"])
                #expect(try statementsExecuted(on: connection) - before == 2)

                try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "c")
                let inserted = try connection.execute("INSERT INTO items (name) VALUES (?)", "d")
                let dID: UInt64 = try connection.query("SELECT id FROM items WHERE name = 'd'")[0].decode(at: 0)
                #expect(inserted.affectedRows == 1 && inserted.lastInsertID == dID)
                try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "e")
                let updated = try connection.execute("UPDATE items SET flag = 1 WHERE name IN (?, ?, ?)", "a", "b", "nobody")
                #expect(updated.affectedRows == 2 && updated.lastInsertID == 0)

                try connection.executeWithNext("UPDATE items SET score = ? WHERE name = ?", 9.5, "e")
                try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "f")
                #expect(try other.query("SELECT COUNT(*) FROM items")[0].decode(Int.self, at: 0) == 0)
            }
            let rows = try other.query("SELECT name, score, flag FROM items ORDER BY id").map {
                "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Double?.self, at: 1) ?? 0) \(try $0.decode(Bool.self, at: 2))"
            }
            #expect(rows == ["a 0.0 true", "b 2.5 true", "c 0.0 false", "d 0.0 false", "e 9.5 false", "f 0.0 false"])
        }
    }

    @Test(
        "A queued write's error is thrown by the statement it went with and the transaction keeps nothing; a failing body sends none; outside a transaction it runs at once"
    )
    func failingQueuedWrites() throws {
        try withTable { connection in
            try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "taken")
            #expect(try count(on: connection) == 1)
            #expect(throws: MariaDBError(.duplicateEntry)) {
                try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "taken")
            }
            #expect(throws: MariaDBError(.duplicateEntry)) {
                try connection.transaction {
                    _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "first")
                    try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "second")
                    try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "taken")
                    _ = try connection.query("SELECT COUNT(*) FROM items")
                    Issue.record("the duplicate went unnoticed")
                }
            }
            #expect(throws: MariaDBError(.duplicateEntry)) {
                try connection.transaction {
                    try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "third")
                    try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "taken")
                }
            }
            struct Refusal: Error {}
            #expect(throws: Refusal.self) {
                try connection.transaction {
                    try connection.executeWithNext("INSERT INTO items (name) VALUES (?)", "fourth")
                    throw Refusal()
                }
            }
            try connection.transaction { _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "fifth") }
            let names = try connection.query("SELECT name FROM items ORDER BY id").map { try $0.decode(String.self, at: 0) }
            #expect(names == ["taken", "fifth"])
        }
    }

    /// A Galera node can also abort the transaction after the last answer its client saw; the check
    /// at the start of the compound COMMIT covers that window, which a single server never opens.
    @Test("A transaction the server rolled back fails at its COMMIT, and the writes it queued are not committed alone")
    func queuedWritesAfterServerRollback() throws {
        try withTable { connection throws in
            var configuration = database.configuration
            configuration.autocommit = false
            let manual = Connection(configuration: configuration)
            defer { manual.close() }
            #expect(throws: MariaDBError(.deadlock)) {
                try manual.transaction {
                    _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "first")
                    // What a Galera node does to a transaction that lost to a replicated write.
                    try manual.run("ROLLBACK")
                    try manual.executeWithNext("INSERT INTO items (name) VALUES (?)", "second")
                }
            }
            #expect(try count(on: connection) == 0)
        }
    }

    private func count(on connection: Connection) throws -> Int {
        try connection.query("SELECT COUNT(*) FROM items")[0].decode(at: 0)
    }

    @Test(
        "Without autocommit, a transaction starts with its first statement, commits or rolls back whole, survives a connection dropped before it; no statement runs outside one"
    )
    func manualCommit() throws {
        try withTable { connection in
            var configuration = database.configuration
            configuration.autocommit = false
            let manual = Connection(configuration: configuration)
            defer { manual.close() }
            #expect(throws: MariaDBError(.misuse)) { try manual.query("SELECT COUNT(*) FROM items") }
            #expect(throws: MariaDBError(.misuse)) { try manual.executeBatch("INSERT INTO items (name) VALUES (?)", rows: [["outside"]]) }
            try manual.transaction {
                _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "first")
                // Not visible to another connection before the commit.
                #expect(try connection.query("SELECT name FROM items").isEmpty)
            }
            func failure(_ body: () throws -> Void) -> MariaDBError.Code? {
                do { try manual.transaction(body) } catch { return (error as? MariaDBError)?.code }
                return nil
            }
            let duplicate = failure {
                _ = try manual.executeBatch("INSERT INTO items (name) VALUES (?)", rows: [["second"], ["third"]])
                _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "second")
            }
            #expect(duplicate == .duplicateEntry)
            // Dropped inside a transaction: it fails and writes nothing; the next one reconnects.
            let lost = failure {
                _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "fourth")
                try database.kill(manual)
                _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "fifth")
            }
            #expect(lost == .connectionLost)
            try manual.transaction { _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "sixth") }
            // Dropped between transactions (the server restarted): the next one's first statement,
            // a write, runs again on a new connection, since nothing of it outlived the old one.
            let id: Int = try manual.transaction { try manual.query("SELECT CONNECTION_ID()")[0].decode(at: 0) }
            try database.kill(connectionID: id)
            try manual.transaction {
                _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "seventh")
                _ = try manual.execute("INSERT INTO items (name) VALUES (?)", "eighth")
            }
            let names = try connection.query("SELECT name FROM items ORDER BY id").map { try $0.decode(String.self, at: 0) }
            #expect(names == ["first", "sixth", "seventh", "eighth"])
        }
    }

    @Test("After the server drops the connection, the next read reconnects and re-prepares by itself")
    func reconnectsForReads() throws {
        try withTable { connection in
            _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "a")
            let before: Int = try connection.query("SELECT CONNECTION_ID()")[0].decode(at: 0)
            try database.kill(connection)
            #expect(try connection.query("SELECT name FROM items").count == 1)
            let after: Int = try connection.query("SELECT CONNECTION_ID()")[0].decode(at: 0)
            #expect(before != after)
        }
    }

    @Test("A transaction whose connection is lost fails with connectionLost and leaves nothing written")
    func lostTransaction() throws {
        try withTable { connection in
            #expect(throws: MariaDBError(.connectionLost)) {
                try connection.transaction {
                    _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "half")
                    try database.kill(connection)
                    _ = try connection.execute("INSERT INTO items (name) VALUES (?)", "written")
                }
            }
            let count: Int = try connection.query("SELECT COUNT(*) FROM items")[0].decode(at: 0)
            #expect(count == 0)
        }
    }

    @Test("Opening and closing connections and statements many times keeps the client's memory flat")
    func openCloseLoop() throws {
        func cycle(_ count: Int) throws {
            for index in 0..<count {
                let connection = try database.connect()
                _ = try connection.query("SELECT ?, ?, REPEAT('x', 4000)", index, "text \(index)")
                _ = try connection.query("SELECT CONNECTION_ID()")
                connection.close()
            }
        }
        try cycle(50)
        // A leaked MYSQL handle (~16 KiB each with its buffers) or statement would add megabytes in
        // every round. Other suites run in the same process at the same time and move its resident
        // size too, so the smallest growth of three rounds is judged: a leak shows in all of them.
        var growths: [Int] = []
        for _ in 0..<3 {
            let before = try residentKilobytes()
            try cycle(500)
            growths.append(try residentKilobytes() - before)
            if growths.last! < 4096 { break }
        }
        #expect(growths.min()! < 4096, "resident memory grew by \(growths) KiB over rounds of 500 connections")
    }

    /// Resident set size of this process from /proc/self/statm (pages of 4 KiB).
    private func residentKilobytes() throws -> Int {
        let fields = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8).split(separator: " ")
        return (Int(fields[1]) ?? 0) * 4
    }
}

@Suite struct PingTests {
    @Test("A ping reconnects after the server dropped the session, and fails while the server is unreachable")
    func ping() throws {
        try withDatabase { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.ping()
            try database.kill(connection)
            try connection.ping()
            var unreachable = database.configuration
            unreachable.endpoint = .unixSocket(path: "/nonexistent/mysql.sock")
            let broken = Connection(configuration: unreachable)
            defer { broken.close() }
            #expect(throws: MariaDBError(.connectionLost)) { try broken.ping() }
        }
    }

    @Test("Logged errors keep the socket path of \"Can't connect\" and hide a duplicate entry's value")
    func redactedMessages() throws {
        var unreachable = try TestDatabase.serverConfiguration()
        unreachable.endpoint = .unixSocket(path: "/nonexistent/mysql.sock")
        let broken = Connection(configuration: unreachable)
        defer { broken.close() }
        do {
            try broken.ping()
            Issue.record("connected to a missing socket")
        } catch let error as MariaDBError {
            #expect(error.debugDescription.contains("Can't connect"), "\(error.debugDescription)")
            #expect(error.debugDescription.contains("'/nonexistent/mysql.sock'"), "\(error.debugDescription)")
        }
        try withDatabase { database in
            let connection = try database.connect()
            defer { connection.close() }
            try connection.run("CREATE TABLE people (email VARCHAR(64) PRIMARY KEY)")
            _ = try connection.execute("INSERT INTO people VALUES (?)", "o'brien@example.com")
            do {
                _ = try connection.execute("INSERT INTO people VALUES (?)", "o'brien@example.com")
                Issue.record("a duplicate was stored")
            } catch let error as MariaDBError {
                #expect(!error.debugDescription.contains("example.com"), "\(error.debugDescription)")
                #expect(error.debugDescription.contains("<redacted>") && error.debugDescription.contains("PRIMARY"))
            }
        }
    }
}
