import Foundation
import MariaDB

/// Runs a whole transaction `body` again when it lost a race: another worker created the same
/// identity at the same moment (`.duplicateEntry`), InnoDB chose it as a deadlock victim, or, on a
/// Galera cluster, another node committed a conflicting write first (the certification failure
/// surfaces as a deadlock, 1213, often at COMMIT). The rolled-back attempt left nothing behind, so
/// each attempt starts from the beginning and reads afresh.
///
/// Between attempts it waits a random time up to 1, 2, 4, ... 64 ms (full jitter), so that writers
/// that keep colliding drift apart. A deadlock is tried again while the thread's `DatabaseBudget`
/// lasts (the waits are taken off it): one person's many devices syncing at once through several
/// nodes collide again and again: of 50 such syncs through two nodes on a busy machine, one lost 12
/// races in a row in 3 rounds of 40 (a 500 then). A duplicate entry, which two attempts settle, is
/// tried `attempts` times in all, and so is a deadlock on a thread without a budget. A transaction
/// whose connection was lost before its COMMIT (a Galera node may close the connection of a
/// transaction it aborts, or the node died) is run once more, on a new connection (to the next
/// node, if that one is gone).
/// - Throws: what `body` throws; `IdentityError(.databaseUnavailable)` when the budget ends while
///   the conflicts go on (503: the client tries again shortly).
package func retryingConflicts<T>(attempts: Int = 12, _ body: () throws -> T) throws -> T {
    var reconnected = false
    var attempt = 0
    while true {
        attempt += 1
        do {
            return try body()
        } catch let error as MariaDBError where error.code == .duplicateEntry || error.code == .deadlock {
            let wait = Duration.nanoseconds(Int64.random(in: 0...1_000_000) << min(attempt - 1, 6))
            if error.code == .deadlock, let remaining = DatabaseBudget.remaining {
                guard remaining > wait else {
                    throw IdentityError(
                        .databaseUnavailable,
                        "conflicting writes to the same rows went on for the request's whole time (\(attempt) attempts)")
                }
                DatabaseBudget.spend(wait)
            } else if attempt >= attempts {
                throw error
            }
            Thread.sleep(forTimeInterval: Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds))
        } catch let error as MariaDBError where error.rolledBackTransaction && !reconnected {
            reconnected = true
        }
    }
}
