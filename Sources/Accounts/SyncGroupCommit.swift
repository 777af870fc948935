#if canImport(Glibc)
import Glibc
#endif
package import MariaDB

/// Group commit of sync writes: the changing syncs of several users that arrive together are
/// written in one transaction, with one batch execution per table and one durable commit,
/// instead of a transaction each.
///
/// There is no extra thread: the first waiting worker becomes the leader, takes every queued
/// write, commits them and wakes the others; writes that arrive meanwhile queue for the next leader.
/// A leader commits on one of the group's own connections when it has them (without autocommit, so
/// a batch needs no `START TRANSACTION` round trip), else on its worker's connection.
///
/// Each write carries the user's version its merge was computed from; a write whose user moved on
/// since (another device, another process), or whose session ended, is not applied, and its worker
/// writes alone, re-reading under the lock (`SyncStore.writeAlone`). So is every write of a batch
/// that fails. Re-applying a merge is harmless: merges are idempotent.
package final class SyncGroupCommit: @unchecked Sendable {
    /// Users per batch (at most one write per user).
    static let maximumBatch = 64
    /// Batches committed at the same time: while one waits for its commit to reach the disk, the
    /// next runs its statements.
    static let maximumLeaders = 2
    /// Writes that must be waiting before another batch starts while one runs; fewer wait for the
    /// running batch to end (at most one batch's time). Batches get larger: in the sync benchmark
    /// 4.9 syncs each instead of 4.3.
    static let minimumConcurrentBatch = 4

    /// One sync's write, waiting in the queue; `committed` is set by its batch's leader.
    package final class Write {
        let userID: UInt64
        /// The caller's session, to be checked by the batch; nil when the caller checked it.
        let session: UInt64?
        let stored: SyncStore.Stored
        let merge: SyncStore.Merge
        var committed: Bool?
        /// Its worker sleeps on this until the write is committed or it may lead a batch: a batch
        /// wakes only its own writes' workers and the next leader, not every waiting worker.
        fileprivate let wakeUp = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

        package init(userID: UInt64, session: UInt64?, stored: SyncStore.Stored, merge: SyncStore.Merge) {
            self.userID = userID
            self.session = session
            self.stored = stored
            self.merge = merge
            pthread_cond_init(wakeUp, nil)
        }

        deinit {
            pthread_cond_destroy(wakeUp)
            wakeUp.deallocate()
        }
    }

    // The queue, the leader count and the free connections, guarded by `mutex`.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var queue: [Write] = []
    /// The group's own connections that no leader holds: one per leader, so a leader always finds
    /// one; none when leaders use their worker's.
    private var freeConnections: [Connection]
    /// Batches being committed now, each by its leader on its own connection.
    private var leading = 0
    private var batches = 0
    private var committedWrites = 0

    /// - Parameter database: where the group opens its own connections (opened on first use); nil
    ///   commits each batch on its leader's connection.
    package init(database: Configuration? = nil) {
        freeConnections = database.map { configuration in
            var manualCommit = configuration
            manualCommit.autocommit = false
            return (0..<SyncGroupCommit.maximumLeaders).map { _ in Connection(configuration: manualCommit) }
        } ?? []
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        // No leader runs any more, so every connection is free.
        freeConnections.forEach { $0.close() }
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Whether a new batch may start now (with `mutex` held).
    private var batchMayStart: Bool {
        !queue.isEmpty && leading < SyncGroupCommit.maximumLeaders && (leading == 0 || queue.count >= SyncGroupCommit.minimumConcurrentBatch)
    }

    /// Writes `merge` (computed from `stored`) for `userID`, in a batch with whatever else is queued,
    /// if `session` (when given) is active.
    /// - Returns: true when committed at version `stored.version + 1`; false when the caller must
    ///   write alone (the user moved on, the session is not active, or the batch failed).
    func commit(userID: UInt64, session: UInt64?, from stored: SyncStore.Stored, _ merge: SyncStore.Merge, on connection: Connection) -> Bool {
        let write = Write(userID: userID, session: session, stored: stored, merge: merge)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        queue.append(write)
        while true {
            if let committed = write.committed { return committed }
            guard batchMayStart else {
                pthread_cond_wait(write.wakeUp, mutex)
                continue
            }
            leading += 1
            let batch = Array(queue.prefix(SyncGroupCommit.maximumBatch))
            queue.removeFirst(batch.count)
            let own = freeConnections.popLast()
            pthread_mutex_unlock(mutex)
            let outcomes = SyncGroupCommit.commit(batch, on: own ?? connection)
            pthread_mutex_lock(mutex)
            if let own { freeConnections.append(own) }
            for (write, committed) in zip(batch, outcomes) { write.committed = committed }
            batches += 1
            committedWrites += outcomes.count { $0 }
            leading -= 1
            // The next batch's leader; a write queued meanwhile leads at once when it may.
            let next = batchMayStart ? queue.first : nil
            // Woken after the mutex is let go, so that they do not wake only to wait for it. `batch`
            // and `next` keep the writes, and so their conditions, alive meanwhile.
            pthread_mutex_unlock(mutex)
            for write in batch { pthread_cond_signal(write.wakeUp) }
            if let next { pthread_cond_signal(next.wakeUp) }
            pthread_mutex_lock(mutex)
        }
    }

    /// Batches run and writes they committed, since the start (tests, diagnostics).
    package var statistics: (batches: Int, committedWrites: Int) {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return (batches, committedWrites)
    }

    /// One batch in one transaction. A write is applied when its user's locked version is still
    /// the one it was merged from and its session is active; only the first write of a user counts.
    /// The usual batch, where every first write holds, takes one statement to check and advance
    /// them all; any other is rolled back and committed again with each write checked.
    /// - Returns: per write, whether it was committed; all false when the transaction failed.
    package static func commit(_ batch: [Write], on connection: Connection) -> [Bool] {
        var users = Set<UInt64>()
        let firsts = batch.map { users.insert($0.userID).inserted }
        let firstWrites = zip(batch, firsts).filter(\.1).map(\.0)
        do {
            return try connection.transaction {
                try SyncGroupCommit.advanceAllCurrent(firstWrites, on: connection)
                try SyncGroupCommit.write(firstWrites, on: connection)
                return firsts
            }
        } catch is NotAllCurrent {
        } catch {
            return batch.map { _ in false }
        }
        do {
            return try connection.transaction {
                let versions = try SyncStore.lockVersions(of: users.sorted(), on: connection)
                let sessions = batch.compactMap { write in write.session.map { Sessions.Pair(sessionID: $0, userID: write.userID) } }
                let active = sessions.isEmpty ? [] : try Sessions.active(sessions, on: connection)
                let applied = zip(batch, firsts).map { write, first in
                    first && versions[write.userID] == write.stored.version
                        && write.session.map { active.contains(Sessions.Pair(sessionID: $0, userID: write.userID)) } != false
                }
                let writes = zip(batch, applied).filter(\.1).map(\.0)
                try SyncStore.advance(writes.map(\.userID), on: connection)
                try SyncGroupCommit.write(writes, on: connection)
                return applied
            }
        } catch {
            return batch.map { _ in false }
        }
    }

    /// Some write of a batch does not hold: its user moved on or its session ended.
    struct NotAllCurrent: Error {}

    /// Moves on the version of every write's user (one write per user) and locks their rows, if
    /// each is still at the version its write was merged from and the write's session is active.
    ///
    /// Two statements of one table each, whose cost grows in step with the batch (MariaDB's CPU: about
    /// 0.35 ms for 16 users, 1 ms for 64). One `UPDATE` of the users joined with their sessions, over
    /// a list of (user, version, session) rows, did both, but its cost grew with the square of the
    /// batch: 1.0–1.6 ms for 16 users, 13–17 ms for 64, more than the rest of the batch.
    /// - Throws: `NotAllCurrent` when some write does not hold; the transaction must be rolled back.
    static func advanceAllCurrent(_ writes: [Write], on connection: Connection) throws {
        // Users first, so their rows are locked in id order, as every batch locks them.
        var advanced: UInt64 = 0
        for chunk in SyncStore.inListChunks(writes) {
            let list = SyncStore.placeholders(chunk.count, each: "(?, ?)")
            advanced += try connection.execute(
                "UPDATE users SET sync_version = sync_version + 1 WHERE (id, sync_version) IN (\(list))",
                binds: chunk.flatMap { write -> [any DatabaseValueConvertible] in [write.userID, write.stored.version] }
            ).affectedRows
        }
        guard advanced == writes.count else { throw NotAllCurrent() }
        let sessions = writes.compactMap { write in write.session.map { Sessions.Pair(sessionID: $0, userID: write.userID) } }
        if !sessions.isEmpty, try !Set(sessions).isSubset(of: Sessions.active(sessions, on: connection)) { throw NotAllCurrent() }
    }

    /// Writes the merges of `writes`, whose users' versions this transaction moved on by one.
    static func write(_ writes: [Write], on connection: Connection) throws {
        try SyncStore.storeProfiles(writes.filter(\.merge.profileChanged).map { ($0.userID, $0.merge.profile) }, on: connection)
        try SyncStore.write(
            writes.flatMap { write in write.merge.lessons.map { (write.userID, write.stored.version + 1, $0) } }, on: connection)
        try SyncStore.write(
            writes.flatMap { write in write.merge.achievements.map { (write.userID, write.stored.version + 1, $0) } }, on: connection)
    }
}
