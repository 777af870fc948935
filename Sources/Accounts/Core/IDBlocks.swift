package import MariaDB
import Synchronization

/// The ids of new users and sessions, handed out by siwa from blocks of consecutive ids it reserves
/// in `id_blocks`. A transaction then knows a new row's id before the row is written, so the rows
/// that refer to it need not wait for the insert's `LAST_INSERT_ID()`: a new user's sign-in sends
/// all its writes with its COMMIT, two statements in all instead of five (docs/PERFORMANCE.md,
/// "Sign-in"). One per process, shared by its worker threads.
///
/// Every insert into `users` and `sessions` takes its id here. A row inserted with the table's
/// AUTO_INCREMENT instead (an older siwa still running, a row written by hand) gets the id after the
/// table's highest, which may lie inside a block reserved earlier: that block's insert then fails
/// with `.duplicateEntry`, and the sign-in's retry takes the next id. A reservation starts above the
/// table's highest id, so rows written before it are never given out again.
package final class IDBlocks: Sendable {
    package enum Table: String, Sendable, CaseIterable {
        case users, sessions
    }

    /// Ids reserved at once. A process that stops leaves the rest of its blocks unused.
    package let blockSize: UInt64
    /// The ids left to hand out, per table: `first..<second`, taken by compare-and-exchange on both
    /// words at once (no lock: under load, the workers' ids are handed out without any of them
    /// waiting for a lock whose holder the scheduler put aside). Blocks only grow, so a pair is never
    /// seen again once it moved on.
    private let users = Atomic(WordPair(first: 0, second: 0))
    private let sessions = Atomic(WordPair(first: 0, second: 0))

    package init(blockSize: UInt64 = 1000) {
        precondition(blockSize > 0, "a block holds at least one id")
        self.blockSize = blockSize
    }

    /// The next id for a new row of `table`, reserving a block first when this process has none left.
    /// - Parameter connection: where a reservation runs: a connection that commits each statement by
    ///   itself (autocommit, no transaction open), never the transaction that will insert the row,
    ///   whose rollback would hand the block out a second time.
    /// - Throws: `MariaDBError` from the reservation (`.deadlock` when another node reserved at the
    ///   same moment: the caller's retry reserves again); `.misuse` for a connection in a transaction.
    package func next(_ table: Table, on connection: Connection) throws -> UInt64 {
        if let id = take(table, orInstall: nil) { return id }
        let block = try reserve(table, on: connection)
        // Another thread may have reserved a block meanwhile: that one is used up first, and the
        // rest of this one is dropped.
        return take(table, orInstall: block) ?? block.lowerBound
    }

    /// Takes the next id left of `table`; when none is left, installs `block` (its first id is the
    /// one taken) or, without one, returns nil.
    private func take(_ table: Table, orInstall block: Range<UInt64>?) -> UInt64? {
        switch table {
        case .users: Self.take(from: users, orInstall: block)
        case .sessions: Self.take(from: sessions, orInstall: block)
        }
    }

    private static func take(from left: borrowing Atomic<WordPair>, orInstall block: Range<UInt64>?) -> UInt64? {
        var current = left.load(ordering: .acquiring)
        while true {
            let desired: WordPair
            let taken: UInt64
            if current.first < current.second {
                (desired, taken) = (WordPair(first: current.first + 1, second: current.second), UInt64(current.first))
            } else if let block {
                (desired, taken) = (WordPair(first: UInt(block.lowerBound + 1), second: UInt(block.upperBound)), block.lowerBound)
            } else {
                return nil
            }
            let (exchanged, original) = left.compareExchange(expected: current, desired: desired, ordering: .acquiringAndReleasing)
            if exchanged { return taken }
            current = original
        }
    }

    /// Reserves the next `blockSize` ids of `table` in one statement that commits by itself. The
    /// statement's `LAST_INSERT_ID(expression)` hands the block's end back with its OK packet.
    private func reserve(_ table: Table, on connection: Connection) throws -> Range<UInt64> {
        guard connection.commitsEachStatement else {
            throw MariaDBError(.misuse, message: "ids are reserved on a connection that commits each statement by itself")
        }
        let result = try connection.execute(
            """
            UPDATE id_blocks SET next_id = LAST_INSERT_ID(GREATEST(next_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM \(raw: table.rawValue))) + ?)
            WHERE table_name = ?
            """, blockSize, table.rawValue)
        guard result.affectedRows == 1, result.lastInsertID > blockSize else {
            throw MariaDBError(.misuse, message: "id_blocks has no row for \(table.rawValue): run siwa migrate")
        }
        return (result.lastInsertID - blockSize)..<result.lastInsertID
    }
}
