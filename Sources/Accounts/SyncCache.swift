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
    /// Users kept; when full, an arbitrary entry makes room.
    let capacity: Int
    private let entries = Mutex<[UInt64: SyncStore.Stored]>([:])

    package init(capacity: Int = 20_000) {
        self.capacity = capacity
    }

    func state(of userID: UInt64) -> SyncStore.Stored? {
        entries.withLock { $0[userID] }
    }

    func keep(_ state: SyncStore.Stored, of userID: UInt64) {
        entries.withLock { entries in
            if entries[userID] == nil, entries.count >= capacity, let evicted = entries.keys.first {
                entries.removeValue(forKey: evicted)
            }
            // Two workers may race for one user: the newer version wins.
            if let current = entries[userID], current.version > state.version { return }
            entries[userID] = state
        }
    }

    func forget(_ userID: UInt64) {
        _ = entries.withLock { $0.removeValue(forKey: userID) }
    }

    /// Number of users cached (tests).
    package var count: Int { entries.withLock { $0.count } }
}
