package import AccountData
import Foundation
import JOSE

/// Binds each sync cursor to the user it was given to: a device presents it back with a tag, an
/// HMAC-SHA256 of the user's id and the cursor's text under a key derived from the data keys, and
/// a cursor whose tag does not match the user (another user's, a forged or an altered one) is
/// dropped: the device gets the whole state with `resync`, never a partial state it would take for
/// all of it (an app that switches accounts without dropping its cursor sends the other account's).
///
/// The first data key tags; every data key is accepted, so that adding a key does not cost every
/// device a full sync (removing one does: its devices resync once). A cursor from before cursors
/// were tagged, or with a tag of any other form, gets `resync` too.
package struct SyncCursorBinding: Sendable {
    private let keys: [[UInt8]]

    /// Bytes of the tag (hex: twice as many characters).
    static let tagBytes = 16

    package init(dataKeys: DataKeys) {
        keys = dataKeys.derivedKeys(purpose: "siwa sync cursor binding v1")
    }

    /// The tag of `cursor` given to `userID`.
    package func tag(_ cursor: SyncCursor, userID: UInt64) -> String {
        hexString(Self.code(key: keys[0], cursor, userID: userID))
    }

    /// Whether `tag` is that of `cursor` given to `userID` under one of the keys (compared in
    /// constant time).
    package func accepts(_ tag: String, for cursor: SyncCursor, userID: UInt64) -> Bool {
        let presented = Array(tag.utf8)
        return keys.reduce(false) { found, key in
            found || constantTimeEquals(presented, Array(hexString(Self.code(key: key, cursor, userID: userID)).utf8))
        }
    }

    /// The most bytes of a tag a device may send: a tag's own length; a longer one is not read.
    static let presentedTagBytes = tagBytes * 2

    private static func code(key: [UInt8], _ cursor: SyncCursor, userID: UInt64) -> [UInt8] {
        Array(HMACSHA256.authenticationCode(key: key, message: Array("\(userID) \(cursor.text)".utf8)).prefix(tagBytes))
    }
}
