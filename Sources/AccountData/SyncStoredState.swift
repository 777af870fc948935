package import SyncRules

/// The user's stored state, as one sync reads it: every record with the version that last changed
/// it, so that what changed since a cursor is found in it.
///
/// `SyncStore.read` (in `Accounts`) reads it from the user's rows; the sync engine (`SyncEngine`, in
/// `Identity`) merges changes into it, pages through it and keeps it in the process's cache.
package struct SyncStoredState: Sendable {
    /// The user's version (`users.sync_version`): each write moves it on by one.
    package var version: UInt64
    /// The records of each collection of the sync (`SyncWire.schema`'s order), by key.
    package var records: [[String: SyncVersioned<SyncRecord>]]
    /// The highest version of a tombstone purged (`users.sync_purged_version`).
    package var purgedVersion: UInt64 = 0
    /// The memory the records take, by `SyncCache.cost(of:)`, kept up to date as they change. The
    /// sync engine counts it when it reads a state (`SyncStore.read` leaves it 0: the cache's
    /// measure is not the database's concern).
    package var recordBytes = 0
    /// The bytes the records take as stored (their JSON), kept up to date as they change: what
    /// the byte limits count.
    package var storedBytes = 0
    /// Whether the user is a guest (stricter byte limits).
    package var guest = false

    package init(
        version: UInt64, records: [[String: SyncVersioned<SyncRecord>]], purgedVersion: UInt64 = 0, recordBytes: Int = 0,
        storedBytes: Int = 0, guest: Bool = false
    ) {
        self.version = version
        self.records = records
        self.purgedVersion = purgedVersion
        self.recordBytes = recordBytes
        self.storedBytes = storedBytes
        self.guest = guest
    }
}

/// A record and the user's version that last changed it.
package struct SyncVersioned<Item: Sendable>: Sendable {
    package var item: Item
    package var version: UInt64
    /// The bytes the record takes as stored (its JSON).
    package var bytes = 0

    package init(item: Item, version: UInt64, bytes: Int = 0) {
        self.item = item
        self.version = version
        self.bytes = bytes
    }
}
