import AccountData
import SyncRules

/// One page of what changed: records in order, whether more follow, and the last record's place.
struct SyncPage {
    struct Entry {
        var version: UInt64
        var position: SyncCursor.Position
        /// Where the record is in its collection's dictionary.
        var index: [String: SyncVersioned<SyncRecord>].Index
    }

    var records: [CollectionRecord] = []
    var more: Bool
    var last: (version: UInt64, position: SyncCursor.Position)?
}

extension SyncStoredState {
    /// What changed after `cursor` in the collections with keys, at most `limit` records and about
    /// `bytes` bytes (`SyncCursor.pageBytes`), ordered by version, then collection (a cursor's list:
    /// its index in `SyncWire.schema`), then key. A collection of one record per user (no keys, as
    /// the profile) is not paged: `SyncEngine` sends it whole.
    /// - Parameter wire: the sync's collections, which say which have no keys.
    func changed(after cursor: SyncCursor, limit: Int, bytes: Int = SyncCursor.pageBytes, wire: SyncWire) -> SyncPage {
        var entries: [SyncPage.Entry] = []
        // Read in place: a copy of the records would retain each of them.
        for (collection, list) in records.enumerated() where wire.emptyRecords[collection] == nil {
            for index in list.indices where list[index].value.version >= cursor.version {
                let record = list[index].value
                let position = SyncCursor.Position(list: collection, key: record.item.key)
                if record.version == cursor.version {
                    guard let after = cursor.position, position > after else { continue }
                }
                entries.append(SyncPage.Entry(version: record.version, position: position, index: index))
            }
        }
        entries.sort { ($0.version, $0.position) < ($1.version, $1.position) }
        var page = SyncPage(more: entries.count > limit)
        var pageBytes = 0
        for (number, entry) in entries.prefix(limit).enumerated() {
            let record = records[entry.position.list][entry.index].value
            if number > 0 && pageBytes + record.bytes > bytes {
                page.more = true
                break
            }
            pageBytes += record.bytes
            page.records.append(CollectionRecord(collection: entry.position.list, record: record.item))
            page.last = (entry.version, entry.position)
        }
        return page
    }
}
