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

/// Where a device is in the user's changes: the version it has seen, or, between the pages of one
/// answer, the last item it got.
///
/// Devices see it as text (`SyncCursorText`, in `Identity`).
package struct SyncCursor: Sendable, Equatable, ExpressibleByIntegerLiteral {
    /// Everything up to this version was sent (with a position: up to the version before it).
    package var version: UInt64
    /// The version the paging started from: what the device had before its first page.
    package var base: UInt64
    /// The last item sent of `version`, by list and key; nil when all of `version` was sent.
    package var position: Position?

    /// The last item sent: items of one version are sent in order of list, then key.
    package struct Position: Sendable, Equatable, Comparable {
        package var list: Int
        package var key: String

        package init(list: Int, key: String) {
            self.list = list
            self.key = key
        }

        package static func < (lhs: Position, rhs: Position) -> Bool { (lhs.list, lhs.key) < (rhs.list, rhs.key) }
    }

    /// Items per answer when a device does not say; a device asks for 1 to this many.
    package static let defaultPage = 1_000
    /// The most bytes of records an answer holds (as stored: their JSON), whatever its number of
    /// items: a page ends before the record that would take it past this, but holds at least one.
    package static let pageBytes = 1_048_576

    /// The cursor of a version (tests write `cursor == 3`).
    package init(integerLiteral version: UInt64) { self.init(version: version) }

    package init(version: UInt64, base: UInt64? = nil, position: Position? = nil) {
        self.version = version
        self.base = base ?? version
        self.position = position
    }
}
