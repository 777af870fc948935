import Identity
import MariaDB
import Testing

/// A transaction that lost a race is run again: a deadlock (a Galera certification failure among
/// them) for as long as the request's database time lasts, a duplicate entry a bounded number of
/// times, a transaction rolled back by a lost connection once.
@Suite struct ConflictRetryTests {
    /// A body that throws `error` for its first `failures` calls, then returns its call count.
    final class Flaky {
        let error: MariaDBError
        let failures: Int
        var calls = 0

        init(_ error: MariaDBError, failures: Int) {
            self.error = error
            self.failures = failures
        }

        func call() throws -> Int {
            calls += 1
            if calls <= failures { throw error }
            return calls
        }
    }

    @Test("With time left, a deadlock is tried again past the attempts a thread without a budget gets")
    func deadlocksWithinBudget() throws {
        let flaky = Flaky(MariaDBError(.deadlock), failures: 30)
        let calls = try DatabaseBudget.run(.seconds(10)) { try retryingConflicts(flaky.call) }
        #expect(calls == 31)
    }

    @Test("Deadlocks past half the request's time end as databaseUnavailable (503); the other half is kept for the last attempt")
    func deadlocksPastBudget() {
        let flaky = Flaky(MariaDBError(.deadlock), failures: .max)
        #expect(throws: IdentityError(.databaseUnavailable)) {
            try DatabaseBudget.run(.seconds(2)) {
                defer {
                    // The waits were taken off the budget, down to the half kept back (within a wait).
                    #expect(DatabaseBudget.remaining! >= .seconds(1))
                    #expect(DatabaseBudget.remaining! < .milliseconds(1_064))
                }
                return try retryingConflicts(flaky.call)
            }
        }
        // The first 12 waits are 447 ms at most.
        #expect(flaky.calls > 12)
    }

    @Test("Without a budget a deadlock is tried 12 times in all, and the last one is thrown")
    func deadlocksWithoutBudget() {
        let flaky = Flaky(MariaDBError(.deadlock), failures: .max)
        #expect(throws: MariaDBError(.deadlock)) { try retryingConflicts(flaky.call) }
        #expect(flaky.calls == 12)
    }

    @Test("A duplicate entry is tried 12 times in all, also with time left")
    func duplicates() {
        let flaky = Flaky(MariaDBError(.duplicateEntry), failures: .max)
        #expect(throws: MariaDBError(.duplicateEntry)) {
            try DatabaseBudget.run(.seconds(10)) { try retryingConflicts(flaky.call) }
        }
        #expect(flaky.calls == 12)
    }

    @Test("Duplicates are counted apart from deadlocks: one after many deadlocks is tried again")
    func duplicateAfterDeadlocks() throws {
        final class Mixed {
            var calls = 0
            func call() throws -> Int {
                calls += 1
                if calls <= 20 { throw MariaDBError(.deadlock) }
                if calls == 21 { throw MariaDBError(.duplicateEntry) }
                return calls
            }
        }
        let mixed = Mixed()
        #expect(try DatabaseBudget.run(.seconds(10)) { try retryingConflicts(mixed.call) } == 22)
    }

    @Test("A transaction rolled back by a lost connection runs once more; a loss at COMMIT does not")
    func lostConnections() throws {
        var rolledBack = MariaDBError(.connectionLost)
        rolledBack.rolledBackTransaction = true
        #expect(try retryingConflicts(Flaky(rolledBack, failures: 1).call) == 2)
        let twice = Flaky(rolledBack, failures: 2)
        #expect(throws: MariaDBError(.connectionLost)) { try retryingConflicts(twice.call) }
        #expect(twice.calls == 2)
        let atCommit = Flaky(MariaDBError(.connectionLost), failures: 1)
        #expect(throws: MariaDBError(.connectionLost)) { try retryingConflicts(atCommit.call) }
        #expect(atCommit.calls == 1)
    }
}
