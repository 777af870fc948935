import AccountData
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
        let entries = Mutex<(states: [UInt64: SyncStore.Stored], bytes: Int)>(([:], 0))
    }

    /// Bytes of memory the kept states may take, by `cost(of:)`, split evenly between the shards;
    /// when a shard is full, arbitrary entries of it make room. A user with more than
    /// `maximumPerUser` items is not kept at all.
    let capacity: Int
    let maximumPerUser: Int
    private let shards: [Shard]

    /// 160 MiB: about 800,000 lessons and achievements with ids of up to 15 bytes, 480,000 with ids
    /// of 24 (docs/PERFORMANCE.md, "The sync cache's memory").
    package static let defaultCapacity = 160 * 1024 * 1024

    /// - Parameter maximumPerUser: 50,000 items: a user with as many records of a declared
    ///   collection pages through them (a first sync of 20,000 is 40 requests) without reading them
    ///   all again for each page. Such a state takes a few megabytes of its shard (a sixteenth of
    ///   `capacity`); one larger than its shard is not kept.
    package init(capacity: Int = SyncCache.defaultCapacity, maximumPerUser: Int = 50_000, shards: Int = 16) {
        self.capacity = capacity
        self.maximumPerUser = maximumPerUser
        self.shards = (0..<max(shards, 1)).map { _ in Shard() }
    }

    private func shard(of userID: UInt64) -> Shard { shards[Int(userID % UInt64(shards.count))] }

    func state(of userID: UInt64) -> SyncStore.Stored? {
        shard(of: userID).entries.withLock { $0.states[userID] }
    }

    func keep(_ state: SyncStore.Stored, of userID: UInt64) {
        let items = SyncCache.size(of: state)
        guard items <= maximumPerUser else { return forget(userID) }
        let cost = SyncCache.cost(of: state)
        let shardCapacity = capacity / shards.count
        shard(of: userID).entries.withLock { entries in
            // Two workers may race for one user: the newer version wins.
            if let current = entries.states[userID] {
                if current.version > state.version { return }
                entries.states[userID] = nil
                entries.bytes -= SyncCache.cost(of: current)
            }
            guard cost <= shardCapacity else { return }
            while entries.bytes + cost > shardCapacity, let evicted = entries.states.first {
                entries.states[evicted.key] = nil
                entries.bytes -= SyncCache.cost(of: evicted.value)
            }
            entries.states[userID] = state
            entries.bytes += cost
        }
    }

    func forget(_ userID: UInt64) {
        shard(of: userID).entries.withLock { entries in
            if let removed = entries.states.removeValue(forKey: userID) { entries.bytes -= SyncCache.cost(of: removed) }
        }
    }

    /// A state's size in items (the profile counts as one).
    static func size(of state: SyncStore.Stored) -> Int {
        state.records.reduce(1 + state.lessons.count + state.achievements.count) { $0 + $1.count }
    }

    /// The memory a kept state takes, in bytes, as measured by `siwa bench-sync-cache`: the shard's
    /// entry and the state's two dictionaries (Swift's hash tables are between three eighths and
    /// three quarters full, so each element is counted in two slots), and each id of more than 15
    /// bytes, which a `String` keeps in an allocation of its own (a key and its item share one).
    static func cost(of state: SyncStore.Stored) -> Int {
        var bytes = userBytes
        bytes += state.lessons.count * lessonBytes
        for lesson in state.lessons.values { bytes += heapBytes(lesson.item.beliefSystemID) + heapBytes(lesson.item.lessonID) }
        bytes += state.achievements.count * achievementBytes
        for achievement in state.achievements.values { bytes += heapBytes(achievement.item.achievementID) }
        return bytes + state.recordBytes
    }

    /// A record of a declared collection, estimated as `cost(of:)` counts an item: its slots in
    /// the table, its key, and its two arrays of values with the strings they hold. A state keeps
    /// the sum of its records' (`Stored.recordBytes`), updated as records change, so that keeping a
    /// state does not visit every record.
    package static func cost(of record: SyncRecord) -> Int {
        var bytes = recordBytes + heapBytes(record.key) + 48 + record.values.count * valueBytes
        for value in record.values { bytes += heapBytes(of: value) }
        return bytes
    }

    /// The allocations of a value beyond its place in its record's array.
    static func heapBytes(of value: SyncValue) -> Int {
        switch value {
        case .string(let text): heapBytes(text)
        case .strings(let texts): 48 + texts.reduce(0) { $0 + MemoryLayout<String>.stride + heapBytes($1) }
        case .counts(let counts): 48 + counts.reduce(0) { $0 + MemoryLayout<SyncCount>.stride + heapBytes($1.device) }
        // An indirect case's box: its value, stamp and device.
        case .stamped(let inner, let stamp): 48 + valueBytes + heapBytes(stamp.device) + heapBytes(of: inner)
        default: 0
        }
    }

    /// A user's entry: its slots in the shard's table, and the storage objects of its two tables.
    package static let userBytes = 2 * (MemoryLayout<UInt64>.stride + MemoryLayout<SyncStore.Stored>.stride) + 2 * 64
    package static let lessonBytes = 2 * (MemoryLayout<LessonKey>.stride + MemoryLayout<SyncStore.Versioned<LessonProgress>>.stride)
    package static let achievementBytes = 2 * (MemoryLayout<String>.stride + MemoryLayout<SyncStore.Versioned<AchievementProgress>>.stride)
    static let recordBytes = 2 * (MemoryLayout<String>.stride + MemoryLayout<SyncStore.Versioned<SyncRecord>>.stride)
    static let valueBytes = MemoryLayout<SyncValue>.stride

    /// The allocation of a string's UTF-8 beyond the 15 bytes a `String` holds in place: its
    /// header (32 bytes), the bytes and a terminating zero, rounded up by malloc to 16 with 16 more
    /// for malloc's own header.
    static func heapBytes(_ string: String) -> Int {
        let count = string.utf8.count
        guard count > 15 else { return 0 }
        return (32 + count + 1 + 15) / 16 * 16 + 16
    }

    /// Users and items cached, and the bytes they take by `cost(of:)` (tests, benchmarks).
    package var count: (users: Int, items: Int, bytes: Int) {
        shards.reduce((0, 0, 0)) { total, shard in
            shard.entries.withLock { entries in
                (
                    total.0 + entries.states.count, total.1 + entries.states.values.reduce(0) { $0 + SyncCache.size(of: $1) },
                    total.2 + entries.bytes
                )
            }
        }
    }

    /// Keeps a state of `lessons` and `achievements` for `userID`, as a sync that read them would
    /// (`siwa bench-sync-cache`).
    package func keep(userID: UInt64, lessons: [LessonProgress], achievements: [AchievementProgress]) {
        var state = SyncStore.Stored(
            version: 1, profileVersion: 1, profile: SyncProfile(totalXP: 0, currentLevel: 1, streakDays: 0, lastActiveDate: nil),
            lessons: [:], achievements: [:])
        for lesson in lessons { state.lessons[lesson.key] = SyncStore.Versioned(item: lesson, version: 1) }
        for achievement in achievements { state.achievements[achievement.key] = SyncStore.Versioned(item: achievement, version: 1) }
        keep(state, of: userID)
    }

    /// Keeps a state of `records` (one list per declared collection, in the schema's order) for
    /// `userID`, built as a sync that read them from their rows builds it (`siwa bench-sync-cache`).
    package func keep(userID: UInt64, records: [[SyncRecord]]) {
        var state = SyncStore.Stored(
            version: 1, profileVersion: 1, profile: SyncProfile(totalXP: 0, currentLevel: 1, streakDays: 0, lastActiveDate: nil),
            lessons: [:], achievements: [:])
        state.records = [[String: SyncStore.Versioned<SyncRecord>]](repeating: [:], count: records.count)
        for (index, list) in records.enumerated() {
            for record in list {
                state.records[index][record.key] = SyncStore.Versioned(item: record, version: 1)
                state.recordBytes += SyncCache.cost(of: record)
            }
        }
        keep(state, of: userID)
    }
}
