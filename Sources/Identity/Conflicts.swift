import MariaDB

/// Runs a whole transaction `body` again (up to 3 times in all) when it lost a race: another
/// worker created the same identity at the same moment (`.duplicateEntry`), or InnoDB chose it
/// as a deadlock victim. The rolled-back attempt left nothing behind.
package func retryingConflicts<T>(_ body: () throws -> T) throws -> T {
    for _ in 1..<3 {
        do {
            return try body()
        } catch let error as MariaDBError where error.code == .duplicateEntry || error.code == .deadlock {
            continue
        }
    }
    return try body()
}
