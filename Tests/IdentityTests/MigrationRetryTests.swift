import Identity
import MariaDB
import Testing

/// A migration run's bookkeeping statements, aborted by another node's DDL on a Galera cluster, are
/// run again; nothing else is.
@Suite struct MigrationRetryTests {
    static let deadlock = MariaDBError(errno: 1213, sqlState: "40001", message: "Deadlock found when trying to get lock")

    @Test("A statement aborted as a deadlock is run again until it succeeds")
    func retriesDeadlocks() throws {
        var calls = 0
        let value = try MigrationRunner.retryingAborts {
            calls += 1
            if calls < 4 { throw Self.deadlock }
            return "done"
        }
        #expect(value == "done" && calls == 4)
    }

    @Test("After the last attempt the deadlock is thrown")
    func givesUp() {
        var calls = 0
        #expect(throws: MariaDBError.self) {
            try MigrationRunner.retryingAborts(attempts: 3) {
                calls += 1
                throw Self.deadlock
            }
        }
        #expect(calls == 3)
    }

    @Test("Any other error is thrown at once")
    func otherErrors() {
        var calls = 0
        let duplicate = MariaDBError(errno: 1062, sqlState: "23000", message: "Duplicate entry '1' for key 'PRIMARY'")
        #expect(throws: MariaDBError.self) {
            try MigrationRunner.retryingAborts {
                calls += 1
                throw duplicate
            }
        }
        #expect(calls == 1)
    }
}
