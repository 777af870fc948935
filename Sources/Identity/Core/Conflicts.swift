import Foundation
import MariaDB

/// Runs a whole transaction `body` again when it lost a race, up to `attempts` times in all: another
/// worker created the same identity at the same moment (`.duplicateEntry`), InnoDB chose it as a
/// deadlock victim, or, on a Galera cluster, another node committed a conflicting write first (the
/// certification failure surfaces as a deadlock, 1213, often at COMMIT). The rolled-back attempt
/// left nothing behind, so each attempt starts from the beginning and reads afresh. Between
/// attempts it waits a random time up to 1, 2, 4, ... 64 ms (full jitter), so that writers that
/// keep colliding (many writes to one user through several nodes) drift apart: 12 attempts wait
/// about 0.3 s in all at most. A transaction whose connection was lost before its COMMIT (a Galera
/// node may close the connection of a transaction it aborts, or the node died) is run once more,
/// on a new connection (to the next node, if that one is gone).
package func retryingConflicts<T>(attempts: Int = 12, _ body: () throws -> T) throws -> T {
    var reconnected = false
    for attempt in 1..<attempts {
        do {
            return try body()
        } catch let error as MariaDBError where error.code == .duplicateEntry || error.code == .deadlock {
            Thread.sleep(forTimeInterval: Double.random(in: 0...0.001) * Double(1 << min(attempt - 1, 6)))
        } catch let error as MariaDBError where error.rolledBackTransaction && !reconnected {
            reconnected = true
        }
    }
    return try body()
}
