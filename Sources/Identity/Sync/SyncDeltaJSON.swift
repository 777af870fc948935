package import AccountData
import Accounts
import StrictJSON
import SyncRules

/// A sync's answer as JSON: the body of `POST /sync` and the `sync` member of an account export.
///
/// The built-in members come first, as they always were; `collections` (an object of each declared
/// collection's changed records) only when the app declares collections; `more` and `resync` only
/// when true. So an app that declares nothing gets the same bytes as before collections existed.
package enum SyncDeltaJSON {
    /// The answer, written straight into bytes (one sync's answer is made per request).
    package static func json(_ delta: SyncDelta, collections: DeclaredCollections = .none) -> [UInt8] {
        let wire = collections.wire
        let items = delta.records
        return wire.write(
            cursor: delta.cursor.text + (delta.cursorTag.map { SyncCursor.tagSeparator + $0 } ?? ""), items: items, more: delta.more,
            resync: delta.resync)
    }
}

/// A cursor as devices see it: the version (`"42"`), or between the pages of one answer
/// `"<version>.<base>.<list>.<key>"`: the version of the last item sent, the version the paging
/// started from (0 for everything), that item's list (0 lessons, 1 achievements, 2 on the declared
/// collections in order) and its key's UTF-8 in lowercase hex (which a pattern can describe
/// exactly: `docs/openapi.yaml`); then `~` and the tag that binds it to its user
/// (`SyncCursorBinding`).
extension SyncCursor {
    /// What separates a cursor's text from its tag.
    package static let tagSeparator = "~"

    /// The cursor and tag of `text` as a device presents it; nil when its cursor is not one this
    /// server gives. A cursor without a tag (given before cursors were bound to their users) has
    /// a nil tag; a tag of any form is taken as it is, for the use case to check (a wrong one gets
    /// the whole state with `resync`, as a device that kept an altered cursor should).
    package static func presented(_ text: String) -> (cursor: SyncCursor, tag: String?)? {
        let parts = text.split(separator: Character(tagSeparator), maxSplits: 1, omittingEmptySubsequences: false)
        guard let cursor = SyncCursor(text: String(parts[0])) else { return nil }
        guard parts.count == 2 else { return (cursor, nil) }
        return (cursor, String(parts[1].prefix(SyncCursorBinding.presentedTagBytes + 1)))
    }

    /// The cursor of `text`; nil when it is not one this server gives.
    package init?(text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts[0].utf8.count <= 20, let version = UInt64(parts[0]) else { return nil }
        guard parts.count > 1 else {
            self.init(version: version)
            return
        }
        guard parts.count == 4, parts[1].utf8.count <= 20, let base = UInt64(parts[1]), parts[2].utf8.count <= 3, let list = Int(parts[2]),
            parts[3].utf8.count <= 4_096, let bytes = Self.hexBytes(parts[3])
        else { return nil }
        // A key that is not UTF-8 is no server's; it only orders, so it is read as it comes.
        self.init(version: version, base: base, position: Position(list: list, key: String(decoding: bytes, as: UTF8.self)))
    }

    /// The cursor as text.
    package var text: String {
        guard let position else { return String(version) }
        let hex = position.key.utf8.map { byte in String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16) }.joined()
        return "\(version).\(base).\(position.list).\(hex)"
    }

    /// The bytes of lowercase hex; nil for anything else.
    private static func hexBytes(_ text: Substring) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
