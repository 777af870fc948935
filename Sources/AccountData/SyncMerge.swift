package import SyncRules

/// What the incoming changes do to a stored state: the records a sync writes.
package struct SyncMerge: Sendable {
    /// Changed records, each merged with its stored one, with its row's JSON.
    package var records: [SyncMergedRecord] = []
    /// How many stored records the merge changes.
    package var count: Int { records.count }

    package init(records: [SyncMergedRecord] = []) {
        self.records = records
    }
}

/// A record as a sync changed it, with what its row stores.
package struct SyncMergedRecord: Sendable {
    /// Its collection's index in the sync's collections (`SyncWire.schema`).
    package var collection: Int
    /// Its collection's name, as its row stores it.
    package var name: String
    package var record: SyncRecord
    /// The record's JSON, its row's body.
    package var json: [UInt8]
    /// Whether the user had no such record before.
    package var isNew = false

    package init(collection: Int, name: String, record: SyncRecord, json: [UInt8], isNew: Bool = false) {
        self.collection = collection
        self.name = name
        self.record = record
        self.json = json
        self.isNew = isNew
    }
}
