import Accounts
import Foundation
import MariaDB
import SIWATestSupport
import Synchronization
import Testing

/// The ids of new users and sessions, reserved in blocks in `id_blocks`.
@Suite final class IDBlocksTests: MigratedSchemaSuite {
    @Test(
        "A process hands out the ids of its block in order; another process gets the next block; a new block starts above every stored row")
    func blocks() throws {
        let first = IDBlocks(blockSize: 3)
        let second = IDBlocks(blockSize: 3)
        #expect(try (0..<4).map { _ in try first.next(.users, on: connection) } == [1, 2, 3, 4])
        #expect(try second.next(.users, on: connection) == 7, "the block after the first process's two")
        #expect(try first.next(.users, on: connection) == 5, "the first process goes on with its own block")
        #expect(try first.next(.sessions, on: connection) == 1, "each table has its own blocks")
        // A row written without a block (an older siwa, by hand) is never given out again.
        _ = try connection.execute("INSERT INTO users (id) VALUES (50)")
        #expect(try (0..<3).map { _ in try second.next(.users, on: connection) } == [8, 9, 51])
    }

    @Test("Ids are reserved on a connection that commits by itself, never inside the transaction that inserts the rows")
    func refusedInATransaction() throws {
        let blocks = IDBlocks()
        #expect(throws: MariaDBError.self) {
            try connection.transaction { _ = try blocks.next(.users, on: connection) }
        }
        #expect(try blocks.next(.users, on: connection) == 1, "the refused call reserved nothing")
    }

    @Test("Threads of one process and two processes at once get distinct ids, with no id skipped within a block")
    func concurrent() throws {
        let processes = [IDBlocks(blockSize: 7), IDBlocks(blockSize: 7)]
        let ids = Mutex<[UInt64]>([])
        let configuration = database.configuration
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            let connection = Connection(configuration: configuration)
            defer { connection.close() }
            for _ in 0..<50 {
                let id = try! processes[thread % 2].next(.sessions, on: connection)
                ids.withLock { $0.append(id) }
            }
        }
        let all = ids.withLock { $0 }
        #expect(Set(all).count == 400)
        let reserved: UInt64 = try connection.query("SELECT next_id FROM id_blocks WHERE table_name = 'sessions'")[0].decode(at: 0)
        #expect(reserved - 1 - UInt64(all.count) <= 2 * 7 * 8, "at most a block per thread left unused: \(reserved)")
    }
}
