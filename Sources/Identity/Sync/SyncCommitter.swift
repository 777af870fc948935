package import AccountData
import Accounts
import CoreMetrics
import Dispatch
import Foundation
package import MariaDB
import SyncRules
import Synchronization
import Telemetry
import Threads

/// Group commit of sync writes: the changing syncs of several users that arrive together are
/// written in one transaction, with one batch execution per table and one durable commit,
/// instead of a transaction each.
///
/// The batches are committed by committer threads, each owning its MariaDB connection (without
/// autocommit, so a batch needs no `START TRANSACTION` round trip) for its whole life: no
/// connection crosses threads. A worker queues its write and sleeps until a committer has
/// committed it or given up on it. A committer takes every queued write (up to a batch); writes
/// that arrive meanwhile wait for the next batch, which the other committer starts once enough of
/// them wait, or the first committer to finish takes.
///
/// Each write carries the user's version its merge was computed from; a write whose user moved on
/// since (another device, another process), or whose session ended, is not applied, and its worker
/// writes alone, re-reading under the lock (`SyncEngine.writeAlone`). So is every write of a batch
/// that fails, unless the batch lost its connection: the database is gone or stopped answering,
/// and the worker's request fails (503) instead of waiting for it a second time. Re-applying a
/// merge is harmless: merges are idempotent.
///
/// A worker waits for its write no longer than its request's `DatabaseBudget` allows (then its
/// write is taken off the queue if no batch took it yet), and each batch runs with a budget of
/// SIWA_DB_TIMEOUT of its own, its reconnect included.
package final class SyncCommitter: Sendable {
    /// Users per batch (at most one write per user).
    static let maximumBatch = 64
    /// Committer threads: while one batch waits for its commit to reach the disk, the next runs
    /// its statements.
    static let committers = 2
    /// Writes that must be waiting before another batch starts while one runs; fewer wait for the
    /// running batch to end (at most one batch's time), which makes batches larger.
    static let minimumConcurrentBatch = 4

    /// What became of a write.
    package enum Outcome: Sendable, Equatable {
        case committed
        /// Not applied (the user moved on, the session is not active, the batch failed for another
        /// reason than a lost connection, or the committer is stopped): the worker writes alone.
        case writeAlone
        /// The batch lost its connection, or the worker's budget was spent before it committed.
        case failed(MariaDBError)
    }

    /// One sync's write, waiting in the queue until a committer sets its outcome.
    package final class Write: Sendable {
        let userID: UInt64
        /// The caller's session, to be checked by the batch; nil when the caller checked it.
        let session: UInt64?
        let stored: SyncStoredState
        let merge: SyncMerge
        /// Set once, before `done` is signalled.
        private let outcome = Mutex<Outcome?>(nil)
        /// Its worker sleeps on this until the outcome is set.
        private let done = DispatchSemaphore(value: 0)

        package init(userID: UInt64, session: UInt64?, stored: SyncStoredState, merge: SyncMerge) {
            self.userID = userID
            self.session = session
            self.stored = stored
            self.merge = merge
        }

        /// The rows it writes: its merge at the version after the one it was merged from.
        var written: (userID: UInt64, version: UInt64, merge: SyncMerge) { (userID, stored.version + 1, merge) }

        fileprivate func finish(_ outcome: Outcome) {
            self.outcome.withLock { $0 = outcome }
            done.signal()
        }

        /// Waits for the outcome, within the thread's `DatabaseBudget` (the time waited is taken
        /// off it); nil when the budget was spent first.
        fileprivate func waitForOutcome() -> Outcome? {
            guard let budget = DatabaseBudget.remaining else {
                done.wait()
                return outcome.withLock { $0 }
            }
            let started = ContinuousClock.now
            let (seconds, attoseconds) = budget.components
            let finished = done.wait(timeout: .now() + .nanoseconds(Int(seconds * 1_000_000_000 + attoseconds / 1_000_000_000))) == .success
            DatabaseBudget.spend(ContinuousClock.now - started)
            return finished ? outcome.withLock { $0 } : nil
        }
    }

    /// The queue and the committers' bookkeeping.
    private struct State: Sendable {
        var queue: [Write] = []
        /// Committers running a batch now.
        var busy = 0
        /// Doorbell rings not yet answered: committers woken to take a batch.
        var woken = 0
        var threadsStarted = false
        var stopped = false
        var batches = 0
        var committedWrites = 0

        /// Whether a new batch may start while `running` batches run.
        func batchMayStart(running: Int) -> Bool {
            !queue.isEmpty && running < SyncCommitter.committers
                && (running == 0 || queue.count >= SyncCommitter.minimumConcurrentBatch)
        }

        /// Takes the next batch off the queue and counts its committer busy.
        mutating func takeBatch() -> [Write] {
            busy += 1
            let batch = Array(queue.prefix(SyncCommitter.maximumBatch))
            queue.removeFirst(batch.count)
            return batch
        }
    }

    /// What the committer threads share with the workers. The threads hold it, not the
    /// committer, so that the committer's end stops them.
    private final class Shared: Sendable {
        let state = Mutex(State())
        /// Wakes a sleeping committer: rung once per batch that may start.
        let doorbell = DispatchSemaphore(value: 0)
        /// The committer threads, joined by `stop()`.
        let threads = Mutex<[OwnedThread]>([])
    }

    private let shared = Shared()
    /// Each committer's connection; its `readWriteTimeout` is also each batch's `DatabaseBudget`.
    private let database: Configuration
    /// Writes per committed batch (`siwa_sync_commit_group_requests`).
    private let groupSizes = Recorder(label: MetricNames.syncCommitGroup)

    /// - Parameter database: where each committer thread opens its own connection (on its first
    ///   batch). The threads start with the first write.
    package init(database: Configuration) {
        var manualCommit = database
        manualCommit.autocommit = false
        self.database = manualCommit
    }

    deinit {
        stop()
    }

    /// Stops the committer threads once the queue is empty and waits until they have closed their
    /// connections and ended. Writes that come after are not batched (their workers write alone).
    package func stop() {
        shared.state.withLock { state in state.stopped = true }
        let threads = shared.threads.withLock { threads in
            defer { threads = [] }
            return threads
        }
        for _ in threads { shared.doorbell.signal() }
        for thread in threads { thread.join() }
    }

    /// Writes `merge` (computed from `stored`) for `userID`, in a batch with whatever else is queued,
    /// if `session` (when given) is active. Blocks until the batch is committed, or the thread's
    /// `DatabaseBudget` is spent.
    /// - Returns: `.committed` at version `stored.version + 1`; `.writeAlone` when the caller must
    ///   write alone; `.failed` when the batch lost its connection or the budget was spent first
    ///   (the write may still be committed by a batch that took it).
    func commit(userID: UInt64, session: UInt64?, from stored: SyncStoredState, _ merge: SyncMerge) -> Outcome {
        let write = Write(userID: userID, session: session, stored: stored, merge: merge)
        let (accepted, startThreads, ring) = shared.state.withLock { state -> (Bool, Bool, Bool) in
            guard !state.stopped else { return (false, false, false) }
            state.queue.append(write)
            let startThreads = !state.threadsStarted
            state.threadsStarted = true
            let ring = state.batchMayStart(running: state.busy + state.woken)
            if ring { state.woken += 1 }
            return (true, startThreads, ring)
        }
        guard accepted else { return .writeAlone }
        if startThreads {
            // Without a thread (logged and counted by `startIfPossible`) the queue is served by those
            // that started, or by no one: then each write's wait ends with its budget and the worker
            // writes alone.
            let started = (0..<SyncCommitter.committers).compactMap { index in
                OwnedThread.startIfPossible(name: "siwa-sync-\(index)") { [shared, database, groupSizes] context in
                    SyncCommitter.run(shared, database: database, groupSizes: groupSizes, context: context)
                }
            }
            shared.threads.withLock { $0 = started }
            // A `stop()` in between did not see the threads: they are stopped here.
            if shared.state.withLock({ $0.stopped }) { stop() }
        }
        if ring { shared.doorbell.signal() }
        if let outcome = write.waitForOutcome() { return outcome }
        // Not taken yet: no batch will write it. Taken: its batch may still commit it.
        shared.state.withLock { state in state.queue.removeAll { $0 === write } }
        return .failed(DatabaseBudget.spentError())
    }

    /// A committer thread: sleeps until rung, then commits batches while they may start, on the
    /// connection it owns.
    private static func run(_ shared: Shared, database: Configuration, groupSizes: Recorder, context: OwnedThread.Context) {
        let connection = Connection(configuration: database)
        context.own(connection)
        while true {
            shared.doorbell.wait()
            var batch = shared.state.withLock { state -> [Write]? in
                state.woken = max(0, state.woken - 1)
                if state.queue.isEmpty { return state.stopped ? nil : [] }
                return state.takeBatch()
            }
            guard batch != nil else { return }
            while let writes = batch, !writes.isEmpty {
                // Its own budget, as a request has: a frozen server costs a batch SIWA_DB_TIMEOUT
                // in all, not a timeout per statement and reconnect.
                let outcomes = DatabaseBudget.run(.seconds(database.readWriteTimeout)) { commit(writes, on: connection) }
                groupSizes.record(writes.count)
                for (write, outcome) in zip(writes, outcomes) { write.finish(outcome) }
                // The next batch is this committer's if it may start now; otherwise the next
                // write that makes one possible rings for it.
                batch = shared.state.withLock { state -> [Write]? in
                    state.busy -= 1
                    state.batches += 1
                    state.committedWrites += outcomes.count { if case .committed = $0 { true } else { false } }
                    return state.batchMayStart(running: state.busy + state.woken) ? state.takeBatch() : nil
                }
            }
        }
    }

    /// Batches run and writes they committed, since the start (tests, diagnostics).
    package var statistics: (batches: Int, committedWrites: Int) {
        shared.state.withLock { ($0.batches, $0.committedWrites) }
    }

    /// One batch in one transaction. A write is applied when its user's locked version is still
    /// the one it was merged from and its session is active; only the first write of a user counts.
    /// The usual batch, where every first write holds, takes one statement to check and advance
    /// them all; any other is rolled back and committed again with each write checked.
    /// - Returns: per write, whether it was committed (`.committed`) or must be written alone;
    ///   all `.failed` when the connection was lost (or the batch's budget spent), all
    ///   `.writeAlone` when the transaction failed otherwise.
    package static func commit(_ batch: [Write], on connection: Connection) -> [Outcome] {
        do {
            return try commitOrThrow(batch, on: connection).map { $0 ? .committed : .writeAlone }
        } catch let error as MariaDBError where error.code == .connectionLost && error.rolledBackTransaction && !DatabaseBudget.isSpent {
            // Lost before its COMMIT, at once or by a stalled node, with time left: nothing of it
            // was kept, and each worker writes alone on another node.
            return batch.map { _ in .writeAlone }
        } catch let error as MariaDBError where error.code == .connectionLost {
            return batch.map { _ in .failed(error) }
        } catch {
            return batch.map { _ in .writeAlone }
        }
    }

    /// `commit(_:on:)`, with its failure thrown.
    /// - Returns: per write, whether it was committed.
    private static func commitOrThrow(_ batch: [Write], on connection: Connection) throws -> [Bool] {
        var users = Set<UInt64>()
        let firsts = batch.map { users.insert($0.userID).inserted }
        let firstWrites = zip(batch, firsts).filter(\.1).map(\.0)
        do {
            return try connection.transaction {
                try SyncStore.advanceAllCurrent(firstWrites.map { ($0.userID, $0.stored.version, $0.session) }, on: connection)
                try SyncStore.write(firstWrites.map(\.written), on: connection)
                return firsts
            }
        } catch is SyncStore.NotAllCurrent {
        }
        return try connection.transaction {
            let versions = try SyncStore.lockVersions(of: users.sorted(), on: connection)
            let active = try SyncStore.areActive(batch.map { write in write.session.map { ($0, write.userID) } }, on: connection)
            let applied = zip(batch.indices, active).map { index, active in
                firsts[index] && versions[batch[index].userID] == batch[index].stored.version && active
            }
            let writes = zip(batch, applied).filter(\.1).map(\.0)
            try SyncStore.advance(writes.map(\.userID), on: connection)
            try SyncStore.write(writes.map(\.written), on: connection)
            return applied
        }
    }
}
