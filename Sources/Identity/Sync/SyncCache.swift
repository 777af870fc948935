import AccountData
import Allocator
package import SyncRules
import Synchronization

/// The synced state of recently active users, kept by one server process so that a sync need
/// not read the user's rows again.
///
/// An entry may be stale (another process or device wrote since), never wrong about the past:
/// merges only move state forward, so a cached state is at most behind the stored one. Each use
/// checks it against the stored version before relying on it: a write only applies when the
/// locked version is still the cached one, and a sync that writes nothing compares the version
/// first. Deleting a user removes the row, so its version check fails too.
package final class SyncCache: Sendable {
    /// One part of the cache under its own lock, so that workers syncing different users seldom
    /// wait for each other.
    private final class Shard: Sendable {
        let entries = Mutex<(states: [UInt64: SyncStoredState], bytes: Int)>(([:], 0))
    }

    /// Bytes of memory the kept states may take, by `cost(of:)`, split evenly between the shards
    /// (each shard's own table counted too); when a shard is full, arbitrary entries of it make room. A user with more than
    /// `maximumPerUser` items is not kept at all.
    let capacity: Int
    let maximumPerUser: Int
    private let shards: [Shard]
    /// Told of each lookup of a user's state, whether it was found (the hit rate in metrics).
    private let onLookup: (@Sendable (_ hit: Bool) -> Void)?

    /// 160 MiB: about 970,000 lessons and achievements with ids of up to 15 bytes, 540,000 with ids
    /// of 24, 150,000 records of the example declaration of a realistic size (docs/PERFORMANCE.md,
    /// "The sync cache's memory").
    package static let defaultCapacity = 160 * 1024 * 1024

    /// - Parameter maximumPerUser: 50,000 items: a user with as many records of a declared
    ///   collection pages through them (a first sync of 20,000 is 40 requests) without reading them
    ///   all again for each page. Such a state takes a few megabytes of its shard (a sixteenth of
    ///   `capacity`); one larger than its shard is not kept.
    /// - Parameter onLookup: told of each lookup of a user's state (`state(of:)`), whether it was
    ///   found: `siwa_sync_cache_lookups_total`.
    package init(
        capacity: Int = SyncCache.defaultCapacity, maximumPerUser: Int = 50_000, shards: Int = 16,
        onLookup: (@Sendable (_ hit: Bool) -> Void)? = nil
    ) {
        self.capacity = capacity
        self.maximumPerUser = maximumPerUser
        self.onLookup = onLookup
        self.shards = (0..<max(shards, 1)).map { _ in Shard() }
    }

    private func shard(of userID: UInt64) -> Shard { shards[Int(userID % UInt64(shards.count))] }

    func state(of userID: UInt64) -> SyncStoredState? {
        let state = shard(of: userID).entries.withLock { $0.states[userID] }
        onLookup?(state != nil)
        return state
    }

    func keep(_ state: SyncStoredState, of userID: UInt64) {
        let items = SyncCache.size(of: state)
        guard items <= maximumPerUser else { return forget(userID) }
        let cost = SyncCache.cost(of: state)
        let shardCapacity = capacity / shards.count
        let evicted = shard(of: userID).entries.withLock { entries -> Int in
            // Two workers may race for one user: the newer version wins.
            if let current = entries.states[userID] {
                if current.version > state.version { return 0 }
                entries.states[userID] = nil
                entries.bytes -= SyncCache.cost(of: current)
            }
            guard cost <= shardCapacity else { return 0 }
            var evicted = 0
            while entries.bytes + cost + SyncCache.tableBytes(of: entries.states, adding: 1) > shardCapacity,
                let entry = entries.states.first
            {
                entries.states[entry.key] = nil
                let entryCost = SyncCache.cost(of: entry.value)
                entries.bytes -= entryCost
                evicted += entryCost
            }
            entries.states[userID] = state
            entries.bytes += cost
            return evicted
        }
        released(evicted)
    }

    /// Drops `userID`'s state: the next sync reads it from the database.
    func forget(_ userID: UInt64) {
        let forgotten = shard(of: userID).entries.withLock { entries -> Int in
            guard let removed = entries.states.removeValue(forKey: userID) else { return 0 }
            let cost = SyncCache.cost(of: removed)
            entries.bytes -= cost
            return cost
        }
        released(forgotten)
    }

    /// Bytes of evicted and forgotten states since malloc's free memory was last given back.
    private let freed = Atomic<Int>(0)

    /// Gives malloc's free memory back to the system once a sixteenth of `capacity` (a shard's
    /// worth) was evicted or forgotten since the last time: the server's workers each allocate from
    /// an arena of their own, and the memory of states that one worker evicts stays resident in
    /// its arena, unused by the others (docs/PERFORMANCE.md, "The sync cache's memory"). Called
    /// outside every lock; one thread gives it back while the others go on.
    private func released(_ bytes: Int) {
        guard bytes > 0 else { return }
        let threshold = max(capacity / 16, 1 << 20)
        let total = freed.add(bytes, ordering: .relaxed).newValue
        guard total >= threshold, freed.compareExchange(expected: total, desired: 0, ordering: .relaxed).exchanged else { return }
        Allocator.releaseFreeMemory()
    }

    /// A state's size in records (and one for the state itself).
    static func size(of state: SyncStoredState) -> Int {
        state.records.reduce(1) { $0 + $1.count }
    }

    /// The memory a kept state takes, in bytes, as malloc hands it out (`allocation(_:)`): the
    /// list of its collections' hash tables, each table at its capacity (Swift's tables are between
    /// three eighths and three quarters full, and never shrink), and its records
    /// (`SyncStoredState.recordBytes`). The shard's own table is counted by the shard.
    static func cost(of state: SyncStoredState) -> Int {
        var bytes = arrayBytes(state.records)
        for records in state.records { bytes += tableBytes(of: records) }
        return bytes + state.recordBytes
    }

    /// A record of a declared collection, as `cost(of:)` counts a state: its array of values at its
    /// capacity, its key (unless it is its one key value's string, which it shares as the codec
    /// reads it), each value's
    /// own allocations, and its `deleted` stamp. Its slot in its collection's table is the table's.
    /// A state keeps the sum of its records' (`SyncStoredState.recordBytes`), updated as records change, so
    /// that keeping a state does not visit every record.
    package static func cost(of record: SyncRecord) -> Int {
        var bytes = arrayBytes(record.values) + heapBytes(of: record.deleted)
        // A joined or JSON key never equals its last value alone.
        if record.values.last != .string(record.key) { bytes += heapBytes(record.key) }
        for value in record.values { bytes += heapBytes(of: value) }
        return bytes
    }

    /// The allocations of a value beyond its place in its record's array.
    static func heapBytes(of value: SyncValue) -> Int {
        switch value {
        case .string(let text): heapBytes(text)
        case .strings(let texts): arrayBytes(texts) + texts.reduce(0) { $0 + heapBytes($1) }
        case .counts(let counts):
            arrayBytes(counts) + counts.reduce(0) { $0 + heapBytes($1.device) }
        // An indirect case's box (an object's header, then its value and stamp), and what they hold.
        case .stamped(let inner, let stamp): allocation(16 + stampedBytes) + heapBytes(stamp.device) + heapBytes(of: inner)
        default: 0
        }
    }

    /// The allocation of a hash table of `table`'s capacity (`adding` more elements may double
    /// it): the storage object's header (64 bytes) and occupancy bitmap, then a key and a value per
    /// bucket; a power of two of buckets, of which at most three quarters are used. An empty table
    /// allocates nothing (every one shares a static empty storage).
    static func tableBytes<Key, Value>(of table: [Key: Value], adding: Int = 0) -> Int {
        let capacity = max(table.capacity, table.count + adding)
        guard capacity > 0 else { return 0 }
        var buckets = 2
        while buckets * 3 / 4 < capacity { buckets *= 2 }
        return allocation(64 + (buckets + 63) / 64 * 8 + buckets * (MemoryLayout<Key>.stride + MemoryLayout<Value>.stride))
    }

    /// What malloc (glibc's) takes for a request of `bytes`: its 8-byte header and the request,
    /// rounded up to 16, at least 32; a request of 128 KiB or more is a mapping of whole pages.
    static func allocation(_ bytes: Int) -> Int {
        if bytes >= 128 * 1024 { return (bytes + 8 + 4095) / 4096 * 4096 }
        return max(32, (bytes + 8 + 15) / 16 * 16)
    }

    /// The allocation of a string's UTF-8 beyond the 15 bytes a `String` holds in place: its
    /// header (32 bytes), then the bytes and a terminating zero, which Swift rounds up to 16.
    static func heapBytes(_ string: String) -> Int {
        let count = string.utf8.count
        guard count > 15 else { return 0 }
        return allocation(32 + (count + 1 + 15) / 16 * 16)
    }

    /// The allocation of an array's storage at its capacity; an empty array allocates nothing
    /// (every one shares a static empty storage).
    static func arrayBytes<Element>(_ array: [Element]) -> Int {
        array.capacity == 0 ? 0 : allocation(arrayHeader + array.capacity * MemoryLayout<Element>.stride)
    }

    /// An array's storage object before its elements: the object's header, the count and the capacity.
    static let arrayHeader = 32
    static let valueBytes = MemoryLayout<SyncValue>.stride
    static let stampedBytes = MemoryLayout<(SyncValue, SyncStamp)>.size

    /// Users and items cached, and the bytes they take by `cost(of:)` (tests, benchmarks).
    package var count: (users: Int, items: Int, bytes: Int) {
        shards.reduce((0, 0, 0)) { total, shard in
            shard.entries.withLock { entries in
                (
                    total.0 + entries.states.count, total.1 + entries.states.values.reduce(0) { $0 + SyncCache.size(of: $1) },
                    total.2 + entries.bytes + SyncCache.tableBytes(of: entries.states)
                )
            }
        }
    }

    /// Keeps a state of `records` (one list per collection of the sync, in `SyncWire.schema`'s
    /// order) for `userID`, built as a sync that read them from their rows builds it (`siwa
    /// bench-sync-cache`).
    package func keep(userID: UInt64, records: [[SyncRecord]]) {
        var state = SyncStoredState(version: 1, records: [[String: SyncVersioned<SyncRecord>]](repeating: [:], count: records.count))
        for (index, list) in records.enumerated() {
            for record in list {
                state.records[index][record.key] = SyncVersioned(item: record, version: 1)
                state.recordBytes += SyncCache.cost(of: record)
            }
        }
        keep(state, of: userID)
    }
}
