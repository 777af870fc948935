import Foundation
import MariaDB

/// Runs a whole transaction `body` again when it lost a race: another worker created the same
/// identity at the same moment (`.duplicateEntry`), InnoDB chose it as a deadlock victim, or, on a
/// Galera cluster, another node committed a conflicting write first (the certification failure
/// surfaces as a deadlock, 1213, often at COMMIT). The rolled-back attempt left nothing behind, so
/// each attempt starts from the beginning and reads afresh.
///
/// Between attempts it waits a random time up to 1, 2, 4, ... 64 ms (full jitter), so that writers
/// that keep colliding drift apart. A deadlock is tried again while half of the thread's
/// `DatabaseBudget` at the call lasts (the waits are taken off it; the other half is the last
/// attempt's, so that its COMMIT is not cut short): one person's many devices syncing at once
/// through several nodes collide again and again: of 50 such syncs through two nodes on a busy
/// machine, one lost 12 races in a row in 3 rounds of 40 (a 500 then). A duplicate entry, which
/// two attempts settle, is tried `attempts` times, and so is a deadlock on a thread without a
/// budget, each counted on its own. A transaction whose connection was lost before its COMMIT (a
/// Galera node may close the connection of a transaction it aborts, or the node died) is run once
/// more, on a new connection (to the next node, if that one is gone).
/// - Throws: what `body` throws; `IdentityError(.databaseUnavailable)` when the deadlocks go on
///   past their share of the budget (503: the client tries again shortly).
package func retryingConflicts<T>(attempts: Int = 12, _ body: () throws -> T) throws -> T {
    let reserve = DatabaseBudget.remaining.map { $0 / 2 }
    var reconnected = false
    var (attempt, deadlocks, duplicates) = (0, 0, 0)
    while true {
        attempt += 1
        do {
            return try body()
        } catch let error as MariaDBError where error.code == .duplicateEntry || error.code == .deadlock {
            let seconds = Double.random(in: 0...0.001) * Double(1 << min(attempt - 1, 6))
            let wait = Duration.seconds(seconds)
            if error.code == .duplicateEntry {
                duplicates += 1
                if duplicates >= attempts { throw error }
            } else if let reserve, let remaining = DatabaseBudget.remaining {
                deadlocks += 1
                guard remaining - wait > reserve else {
                    throw IdentityError(
                        .databaseUnavailable,
                        "conflicting writes to the same rows went on for half the request's time (\(deadlocks) attempts)")
                }
                DatabaseBudget.spend(wait)
            } else {
                deadlocks += 1
                if deadlocks >= attempts { throw error }
            }
            Thread.sleep(forTimeInterval: seconds)
        } catch let error as MariaDBError where error.rolledBackTransaction && !reconnected {
            reconnected = true
        }
    }
}
