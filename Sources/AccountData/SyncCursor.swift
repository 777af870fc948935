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
