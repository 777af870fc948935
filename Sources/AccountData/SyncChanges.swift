package import SyncRules

/// What a device sends to `POST /sync`, already validated.
package struct SyncChanges: Sendable {
    /// Where the device is: nil for everything.
    package var cursor: SyncCursor?
    /// The records it sends, the built-in collections' and the declared ones', each with its
    /// collection's index in `DeclaredCollections.wire`.
    package var records: [CollectionRecord]
    /// The most items an answer may hold; nil for `SyncCursor.defaultPage`.
    package var limit: Int?
    /// The tag that binds `cursor` to the user it was given to, as the device sent it (nil for a
    /// cursor without one). The use case checks it before `cursor` is used, and drops a cursor the
    /// user was never given.
    package var cursorTag: String?

    package init(cursor: SyncCursor?, records: [CollectionRecord] = [], limit: Int? = nil, cursorTag: String? = nil) {
        self.cursorTag = cursorTag
        self.cursor = cursor
        self.records = records
        self.limit = limit
    }
}

/// A record with its collection's index in the sync's collections (`SyncWire.schema`: the built-in
/// `progress` and `achievements`, the declared collections, the built-in `profile`).
package typealias CollectionRecord = SyncWire.Item
