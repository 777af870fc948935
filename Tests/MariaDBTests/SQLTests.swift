import MariaDB
import Testing

/// Statements written as literals: what is bound, what is text.
@Suite struct SQLTests {
    @Test("An interpolated value is bound: a ? in the text, the value among the binds, never in the text")
    func binding() {
        let email = "x' OR '1'='1"
        let sql: SQL = "SELECT id FROM user_emails WHERE address = \(email) AND user_id = \(UInt64(7)) AND note = \(String?.none)"
        #expect(sql.text == "SELECT id FROM user_emails WHERE address = ? AND user_id = ? AND note = ?")
        #expect(sql.binds == [.text(email), .uint(7), .null])
        #expect(!sql.text.contains("OR"), "the value is not in the text")
        #expect(!sql.description.contains(email), "nor in what is logged")
    }

    @Test("A literal without interpolation is its text and binds nothing")
    func literal() {
        let sql: SQL = "SELECT 1"
        #expect(sql.text == "SELECT 1" && sql.binds.isEmpty)
    }

    @Test("An interpolated statement splices its text and binds in place, in order")
    func composition() {
        let condition: SQL = "s.user_id = \(UInt64(5)) AND s.revoked_at IS NULL"
        let column: SQL = "CAST(UNIX_TIMESTAMP(s.created_at) AS SIGNED)"
        let sql: SQL = "SELECT \(column) FROM sessions s WHERE s.device = \("phone") AND \(condition) LIMIT \(10)"
        #expect(
            sql.text
                == "SELECT CAST(UNIX_TIMESTAMP(s.created_at) AS SIGNED) FROM sessions s WHERE s.device = ? AND s.user_id = ? AND s.revoked_at IS NULL LIMIT ?"
        )
        #expect(sql.binds == [.text("phone"), .uint(5), .int(10)])
        let joined = SQL.joined(["a = \(1)", "b = \(2)", "c IS NULL"] as [SQL], separator: " AND ")
        #expect(joined.text == "a = ? AND b = ? AND c IS NULL" && joined.binds == [.int(1), .int(2)])
        let added: SQL = "SELECT \(1)" + " + \(2)"
        #expect(added.text == "SELECT ? + ?" && added.binds == [.int(1), .int(2)])
    }

    @Test("Only raw: splices text, and binds nothing")
    func raw() {
        let table = "audit_events"
        let sql: SQL = "SELECT COUNT(*) FROM \(raw: table) WHERE id > \(3)"
        #expect(sql.text == "SELECT COUNT(*) FROM audit_events WHERE id > ?")
        #expect(sql.binds == [.int(3)])
    }

    @Test("An IN list is a ? per value, padded to a power of two by repeating its last value", arguments: [1, 2, 3, 5, 33, 64])
    func list(count: Int) {
        let ids = (1...count).map { UInt64($0) }
        let sql: SQL = "SELECT id FROM users WHERE id IN (\(list: ids))"
        let padded = SQL.listLengths.last { $0 >= count }!
        #expect(padded.nonzeroBitCount == 1 && padded >= count && padded < 2 * count + 1)
        #expect(sql.text == "SELECT id FROM users WHERE id IN (" + Array(repeating: "?", count: padded).joined(separator: ", ") + ")")
        #expect(sql.binds == ids.map { .uint($0) } + Array(repeating: .uint(UInt64(count)), count: padded - count))
    }

    @Test("A list longer than the longest length is not padded; chunks split it to that length")
    func longList() {
        let ids = Array(0..<130)
        let sql: SQL = "IN (\(list: ids))"
        #expect(sql.binds.count == 130)
        let chunks = SQL.chunks(ids)
        #expect(chunks.map(\.count) == [64, 64, 2])
        #expect(chunks.flatMap { $0 } == ids)
        #expect(SQL.chunks([Int]()).isEmpty)
    }

    @Test("Rows are bound each in parentheses, in order, unpadded")
    func rows() {
        let sql: SQL = "INSERT INTO t (a, b) VALUES \(rows: [[1, "x"], [2, "y"], [3, "z"]])"
        #expect(sql.text == "INSERT INTO t (a, b) VALUES (?, ?), (?, ?), (?, ?)")
        #expect(sql.binds == [.int(1), .text("x"), .int(2), .text("y"), .int(3), .text("z")])
    }

    @Test("Tuples for (a, b) IN (...) are padded like a list, by repeating the last tuple")
    func tuples() {
        let sql: SQL = "WHERE (id, version) IN (\(tuples: [[1, 5], [2, 6], [3, 7]]))"
        #expect(sql.text == "WHERE (id, version) IN ((?, ?), (?, ?), (?, ?), (?, ?))")
        #expect(sql.binds == [.int(1), .int(5), .int(2), .int(6), .int(3), .int(7), .int(3), .int(7)])
    }

    @Test("Values after the statement are taken when it interpolates none; both at once are refused")
    func trailingBinds() throws {
        let positional: SQL = "SELECT id FROM users WHERE id = ? AND name = ?"
        #expect(try positional.values(trailing: [UInt64(1), "a"]) == [.uint(1), .text("a")])
        let interpolated: SQL = "SELECT id FROM users WHERE id = \(UInt64(1))"
        #expect(try interpolated.values(trailing: []) == [.uint(1)])
        #expect(throws: MariaDBError(.misuse)) { try interpolated.values(trailing: ["a"]) }
    }

    @Test("Two statements built alike have the same text whatever their values (one prepared statement)")
    func sameText() {
        func statement(_ id: UInt64, _ names: [String]) -> SQL { "SELECT id FROM users WHERE id = \(id) OR name IN (\(list: names))" }
        #expect(statement(1, ["a", "b", "c"]).text == statement(99, ["x", "y", "z", "w"]).text)
        #expect(statement(1, ["a"]) != statement(2, ["a"]))
    }
}
