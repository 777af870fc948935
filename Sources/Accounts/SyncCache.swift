import SyncRules
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
        let entries = Mutex<(states: [UInt64: SyncStore.Stored], items: Int)>(([:], 0))
    }

    /// Lessons and achievements kept in all (about 160 bytes each, with their versions), split
    /// evenly between the shards; when a shard is full, arbitrary entries of it make room. A user
    /// with more than `maximumPerUser` items is not kept at all.
    let capacity: Int
    let maximumPerUser: Int
    private let shards: [Shard]

    package init(capacity: Int = 1_000_000, maximumPerUser: Int = 5_000, shards: Int = 16) {
        self.capacity = capacity
        self.maximumPerUser = maximumPerUser
        self.shards = (0..<max(shards, 1)).map { _ in Shard() }
    }

    private func shard(of userID: UInt64) -> Shard { shards[Int(userID % UInt64(shards.count))] }

    func state(of userID: UInt64) -> SyncStore.Stored? {
        shard(of: userID).entries.withLock { $0.states[userID] }
    }

    func keep(_ state: SyncStore.Stored, of userID: UInt64) {
        let size = SyncCache.size(of: state)
        let shardCapacity = capacity / shards.count
        shard(of: userID).entries.withLock { entries in
            // Two workers may race for one user: the newer version wins.
            if let current = entries.states[userID] {
                if current.version > state.version { return }
                entries.states[userID] = nil
                entries.items -= SyncCache.size(of: current)
            }
            guard size <= maximumPerUser, size <= shardCapacity else { return }
            while entries.items + size > shardCapacity, let evicted = entries.states.first {
                entries.states[evicted.key] = nil
                entries.items -= SyncCache.size(of: evicted.value)
            }
            entries.states[userID] = state
            entries.items += size
        }
    }

    func forget(_ userID: UInt64) {
        shard(of: userID).entries.withLock { entries in
            if let removed = entries.states.removeValue(forKey: userID) { entries.items -= SyncCache.size(of: removed) }
        }
    }

    /// A state's size in items (the profile counts as one).
    static func size(of state: SyncStore.Stored) -> Int { 1 + state.lessons.count + state.achievements.count }

    /// Users and items cached (tests).
    package var count: (users: Int, items: Int) {
        shards.reduce((0, 0)) { total, shard in
            shard.entries.withLock { (total.0 + $0.states.count, total.1 + $0.items) }
        }
    }
}
