/// What changed for the user since the device's cursor, with the new cursor.
package struct SyncDelta: Sendable, Equatable {
    package var cursor: SyncCursor
    /// The records that changed since the cursor (a page of them), each with its collection's
    /// index, in order; a collection of one record per user (the profile) when it changed since
    /// the cursor, and always in an answer from nothing.
    package var records: [CollectionRecord]
    /// How many stored records this sync changed.
    package var changed: Int
    /// Whether more pages follow: the device syncs again with `cursor` at once.
    package var more = false
    /// Whether the device must drop what it synced before and take this answer (and the pages after
    /// it) as its whole state: its cursor is older than deleted records the server no longer keeps,
    /// ahead of the user's version, or not one the user was given.
    package var resync = false
    /// The tag that binds `cursor` to the user, sent after it; nil sends the cursor alone.
    package var cursorTag: String?

    package init(cursor: SyncCursor, records: [CollectionRecord] = [], changed: Int) {
        self.cursor = cursor
        self.records = records
        self.changed = changed
    }
}
