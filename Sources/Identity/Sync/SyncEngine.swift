package import AccountData
import Accounts
package import MariaDB
import SyncRules

/// Sync's use case below `SyncUseCases`: a device's changes merged into the user's state, written,
/// and what changed since the device's cursor, a page at a time. Its statements are `SyncStore`'s
/// (in `Accounts`); the merge rules are those of the `SyncRules` module.
///
/// A sync first reads the user's state without locks (or takes it from the process's `SyncCache`)
/// and merges in memory. When nothing would change (a device re-sending what the server has), it
/// answers from that read: no transaction, no write. Otherwise it writes in one transaction that
/// locks the user's row first (its own, or a batch of `SyncCommitter`'s), so two devices of one user
/// are merged one after the other and no update is lost; if another sync got in between (the user's
/// version moved), the state is read again under the lock. Only rows whose merged state differs are
/// written.
package enum SyncEngine {
    /// Merges `changes` into `userID`'s state and returns what changed since the cursor. Runs its
    /// own transaction when it writes; call it outside one.
    /// - Returns: nil when the user does not exist (deleted meanwhile) or `session` is not active.
    /// - Parameters:
    ///   - session: the caller's session of `userID`, checked by the statements the sync runs anyway
    ///     (for a batch, one statement for all its sessions), so that checking it costs no round
    ///     trip of its own; nil when the caller checked it already.
    ///   - group: batches the write with other users' concurrent syncs; nil writes alone.
    ///   - cache: the process's recently synced states, used and kept up to date; nil reads the user.
    ///   - collections: the app's declared collections.
    /// - Throws: `SyncLimitExceeded` when the changes would take a collection past its items per user.
    package static func sync(
        userID: UInt64, session: UInt64? = nil, changes: SyncChanges, on connection: Connection, group: SyncCommitter? = nil,
        cache: SyncCache? = nil, collections: DeclaredCollections = .none
    ) throws -> SyncDelta? {
        let cached = cache?.state(of: userID)
        guard var stored = try cached ?? readConsistent(userID: userID, session: session, collections: collections, on: connection)
        else { return nil }
        var merge: SyncMerge
        do {
            merge = try merged(changes, into: stored, collections)
        } catch is SyncLimitExceeded where cached != nil {
            // A cached state may be behind (another process wrote, a guest was linked since): a
            // refusal is decided on the stored state.
            guard let fresh = try readConsistent(userID: userID, session: session, collections: collections, on: connection) else {
                return nil
            }
            stored = fresh
            merge = try merged(changes, into: stored, collections)
        }
        // A cached state that this sync does not change is checked against the stored version before
        // it answers (another device may have moved on); a changing sync's write checks it under lock.
        if cached != nil, merge.count == 0, try SyncStore.currentVersion(of: userID, session: session, on: connection) != stored.version {
            guard let fresh = try readConsistent(userID: userID, session: session, collections: collections, on: connection) else {
                cache?.forget(userID)
                return nil
            }
            stored = fresh
            merge = try merged(changes, into: stored, collections)
        }
        var version = stored.version
        if merge.count > 0 {
            switch group?.commit(userID: userID, session: session, from: stored, merge) {
            case .committed:
                break
            case .failed(let error):
                // The database is gone or stopped answering: writing alone would wait for it again.
                throw error
            case .writeAlone, nil:
                guard
                    let written = try writeAlone(
                        userID: userID, session: session, changes, from: stored, merge, collections: collections, on: connection)
                else {
                    cache?.forget(userID)
                    return nil
                }
                (stored, merge) = written
            }
            version = merge.count > 0 ? stored.version + 1 : stored.version
        }
        let state = merge.count > 0 ? applied(merge, to: stored) : stored
        // The cache learns the state, unless it is the cached state itself, unchanged.
        if cached?.version != state.version { cache?.keep(state, of: userID) }
        // A cursor from the future (a restored backup, another server) gets everything with a
        // resync, and so does one older than a purged tombstone: that device missed a deletion,
        // and must start over.
        let ahead = changes.cursor.map { $0.version > stored.version } ?? false
        var cursor = ahead ? SyncCursor(version: 0) : changes.cursor ?? SyncCursor(version: 0)
        // A pass that starts from nothing carries the version it started at as its base: a tombstone
        // purged after it, of a record an earlier page sent, calls for a resync as well.
        let resync = ahead || ((cursor.version > 0 || cursor.position != nil) && cursor.base < state.purgedVersion)
        if resync || (cursor.version == 0 && cursor.position == nil) { cursor = SyncCursor(version: 0, base: state.version) }
        let wire = collections.wire
        var delta = SyncDelta(
            cursor: SyncCursor(version: version),
            records: merge.records.filter { wire.emptyRecords[$0.collection] == nil }.map {
                CollectionRecord(collection: $0.collection, record: $0.record)
            },
            changed: merge.count)
        delta.resync = resync
        // A device that was up to date gets exactly what this sync changed; one that was behind also
        // gets what other devices changed meanwhile, a page at a time.
        if cursor.version != stored.version || cursor.position != nil {
            let page = state.changed(after: cursor, limit: changes.limit ?? SyncCursor.defaultPage, wire: wire)
            (delta.records, delta.more) = (page.records, page.more)
            if page.more, let last = page.last {
                delta.cursor = SyncCursor(version: last.version, base: cursor.base, position: last.position)
            }
        }
        // A collection of one record per user (the profile) is sent whole, outside the pages: when
        // it changed since the cursor, and in every answer from nothing (as it is before any device
        // set it, when none did).
        for (index, empty) in wire.emptyRecords.enumerated() {
            guard let empty else { continue }
            let stored = index < state.records.count ? state.records[index][empty.key] : nil
            if cursor.version == 0 || (stored?.version ?? 0) > cursor.version {
                delta.records.append(CollectionRecord(collection: index, record: stored?.item ?? empty))
            }
        }
        return delta
    }

    /// Writes `merge` in a transaction of its own. Moving the version from the one read locks the
    /// user's row; if another sync moved it first, the state is read again under the lock and merged
    /// again. Returns the state the write started from and what it wrote; nil when the user is gone
    /// or `session` is not active.
    static func writeAlone(
        userID: UInt64, session: UInt64?, _ changes: SyncChanges, from stored: SyncStoredState, _ merge: SyncMerge,
        collections: DeclaredCollections, on connection: Connection
    ) throws -> (SyncStoredState, SyncMerge)? {
        // Before the transaction: its first plain read fixes the snapshot its reads see, which must
        // come after the user's row is locked (`read(lock: true)` reads the rows of another sync
        // that moved the version first).
        if let session, try !Sessions.isActive(sessionID: session, userID: userID, on: connection) { return nil }
        return try connection.transaction { () -> (SyncStoredState, SyncMerge)? in
            var (stored, merge) = (stored, merge)
            if try !SyncStore.advance(userID: userID, from: stored.version, on: connection) {
                guard let fresh = try SyncStore.read(userID: userID, session: nil, lock: true, collections: collections, on: connection)
                else { return nil }
                stored = counted(fresh)
                merge = try merged(changes, into: stored, collections)
                // On one server the lock holds the version still. A Galera node applies another
                // node's write without regard to local locks: a lost race, not an ended session,
                // so the whole sync runs again (the caller retries deadlocks).
                if merge.count > 0, try !SyncStore.advance(userID: userID, from: stored.version, on: connection) {
                    throw MariaDBError(.deadlock, errno: 1213, sqlState: "40001", message: "the sync version moved under the row lock")
                }
            }
            if merge.count > 0 {
                try SyncStore.write([(userID, stored.version + 1, merge)], on: connection)
            }
            return (stored, merge)
        }
    }

    /// The state after `merge` was written over `stored`.
    static func applied(_ merge: SyncMerge, to stored: SyncStoredState) -> SyncStoredState {
        var state = stored
        state.version += 1
        for merged in merge.records {
            while state.records.count <= merged.collection { state.records.append([:]) }
            let old = state.records[merged.collection].updateValue(
                SyncVersioned(item: merged.record, version: state.version, bytes: merged.json.count), forKey: merged.record.key)
            state.recordBytes += SyncCache.cost(of: merged.record) - (old.map { SyncCache.cost(of: $0.item) } ?? 0)
            state.storedBytes += merged.json.count - (old?.bytes ?? 0)
        }
        return state
    }

    /// `SyncStore.readConsistent`, with the memory of the records counted as the cache measures it.
    static func readConsistent(userID: UInt64, session: UInt64?, collections: DeclaredCollections, on connection: Connection) throws
        -> SyncStoredState?
    {
        try SyncStore.readConsistent(userID: userID, session: session, collections: collections, on: connection).map(counted)
    }

    /// `state` with `recordBytes` set: the memory its records take, by `SyncCache.cost(of:)`.
    static func counted(_ state: SyncStoredState) -> SyncStoredState {
        var state = state
        state.recordBytes = state.records.reduce(0) { bytes, records in
            records.values.reduce(bytes) { $0 + SyncCache.cost(of: $1.item) }
        }
        return state
    }

    /// The stored records that `changes` (as a device sent them, a record possibly listed twice)
    /// would change, merged: each incoming record with its stored one alone, then those that change
    /// it with each other (a record that leaves its stored one as it is changes nothing, whatever it
    /// is merged with, since merges are idempotent, commutative and associative: so the usual sync,
    /// which changes few of the records it sends, merges few), each with its row's JSON.
    /// - Throws: `SyncLimitExceeded` when a collection would hold more records, or the records more
    ///   bytes, than the limits allow.
    package static func merged(_ changes: SyncChanges, into stored: SyncStoredState, _ collections: DeclaredCollections = .none) throws
        -> SyncMerge
    {
        guard !changes.records.isEmpty else { return SyncMerge() }
        let wire = collections.wire
        let declared = wire.schema.collections
        var changed: [SyncMergedRecord] = []
        for change in changes.records {
            let index = change.collection
            let kept = index < stored.records.count ? stored.records[index][change.record.key]?.item : nil
            // The usual item of a sync: sent again as the server has it. One comparison, no merge.
            if let kept, kept == change.record { continue }
            // A collection of one record per user has it from the start, empty.
            let current = kept ?? wire.emptyRecords[index]
            let merged = current.map { declared[index].merged($0, change.record) } ?? change.record
            guard merged != current else { continue }
            // A record listed twice: few records change, so it is looked for among those.
            if let at = changed.firstIndex(where: { $0.collection == index && $0.record.key == merged.key }) {
                changed[at].record = declared[index].merged(changed[at].record, merged)
                continue
            }
            changed.append(SyncMergedRecord(collection: index, name: declared[index].name, record: merged, json: [], isNew: kept == nil))
        }
        var added = [Int](repeating: 0, count: wire.codecs.count)
        for record in changed where record.isNew { added[record.collection] += 1 }
        for (index, count) in added.enumerated() where count > 0 {
            let collection = wire.codecs[index].collection
            let limit = collection.limits.itemsPerUser
            if (index < stored.records.count ? stored.records[index].count : 0) + count > limit {
                throw SyncLimitExceeded(path: wire.path(of: index), problem: "would hold more than \(limit) records for this user")
            }
        }
        for index in changed.indices { changed[index].json = wire.codecs[changed[index].collection].json(changed[index].record) }
        try checkBytes(of: changed, against: stored, collections)
        return SyncMerge(records: changed)
    }

    /// Refuses `changed` when a merged record would take its counters' devices or its bytes past its
    /// collection's limits, or the records past the bytes a request may write or the user may
    /// store (`SyncSchema.Limits`, stricter for a guest). A record stored before a limit was
    /// lowered may stay over it, as long as a change does not take it further.
    /// - Throws: `SyncLimitExceeded` naming the limit; nothing was written.
    static func checkBytes(of changed: [SyncMergedRecord], against stored: SyncStoredState, _ collections: DeclaredCollections) throws {
        let wire = collections.wire
        let limits = wire.schema.limits
        var requestBytes = 0
        var growth = 0
        for merged in changed {
            let collection = wire.codecs[merged.collection].collection
            let current = merged.collection < stored.records.count ? stored.records[merged.collection][merged.record.key] : nil
            if let (field, problem) = collection.counterProblem(in: merged.record, comparedTo: current?.item) {
                throw SyncLimitExceeded(path: wire.path(of: merged.collection) + "." + field, problem: problem)
            }
            let bytes = merged.json.count
            if bytes > collection.limits.bytesPerRecord && bytes > (current?.bytes ?? 0) {
                throw SyncLimitExceeded(
                    path: wire.path(of: merged.collection),
                    problem: "would make a record of \(bytes) bytes, more than the \(collection.limits.bytesPerRecord) a record may take")
            }
            requestBytes += bytes
            growth += bytes - (current?.bytes ?? 0)
        }
        if requestBytes > limits.bytesPerRequest {
            throw SyncLimitExceeded(
                path: "collections",
                problem: "would write \(requestBytes) bytes of records, more than the \(limits.bytesPerRequest) a request may")
        }
        let allowed = stored.guest ? limits.guestBytesPerUser : limits.bytesPerUser
        if growth > 0 && stored.storedBytes + growth > allowed {
            throw SyncLimitExceeded(
                path: "collections",
                problem: "would store \(stored.storedBytes + growth) bytes of records for this user, more than the \(allowed) "
                    + (stored.guest ? "a guest may (signing in with Apple allows more)" : "a user may"))
        }
    }
}
