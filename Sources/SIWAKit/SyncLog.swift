import Foundation
import SyncRules

/// The sync state's log: what changed since the state was last stored whole, one entry per change
/// the app or a sync made, appended to a value of its own (the state's key and `.log`).
///
/// An entry sets slots of the state to values (a lesson in the queue, a record in the view, the
/// cursor): replaying the entries in order onto the stored state gives the state after them,
/// without merge rules or collections. Each entry names the generation of the stored state it
/// follows; storing the state whole starts a new generation, so entries an interrupted compaction
/// left behind are recognised and skipped. Each is framed as `LENGTH CHECKSUM JSON\n`: a last
/// entry cut short by a crash does not read, and it and anything after it are ignored.
enum SyncLog {
    /// Which of the state's copies a change is of: the view, the queue, or the changes set aside.
    enum Part: String, Codable {
        case view, pending, refused
    }

    /// One slot of the state set to a value.
    enum Change: Codable, Equatable {
        case cursor(String?)
        case profile(Part, SyncProfile?)
        /// The lesson of this lesson's key is this one (added or replaced).
        case lesson(Part, LessonProgress)
        /// The lessons of these lessons' keys are gone.
        case lessonsRemoved(Part, [LessonProgress])
        case achievement(Part, AchievementProgress)
        case achievementsRemoved(Part, [AchievementProgress])
        /// The record of `key` in `collection`, as the codec writes it; nil: gone.
        case record(Part, collection: String, key: String, text: String?)
        /// The view and its records are emptied (a resync).
        case viewCleared
        /// The changes set aside are emptied, records of `collections` included.
        case refusedCleared(collections: [String])

        /// Whether the change is of what the app sees.
        var changesView: Bool {
            switch self {
            case .profile(.view, _), .lesson(.view, _), .lessonsRemoved(.view, _), .achievement(.view, _),
                .achievementsRemoved(.view, _), .record(.view, _, _, _), .viewCleared:
                true
            default: false
            }
        }
    }

    /// An entry: the changes of one step, after the stored state of `generation`.
    struct Entry: Codable, Equatable {
        var generation: Int
        var changes: [Change]
    }

    /// An entry's bytes in the log.
    static func frame(_ entry: Entry) throws -> Data {
        let json = try JSONCoding.encoder().encode(entry)
        var framed = Data("\(json.count) \(String(checksum(json), radix: 16)) ".utf8)
        framed.append(json)
        framed.append(UInt8(ascii: "\n"))
        return framed
    }

    /// The entries of a log, up to the first that does not read; `torn` when one did not.
    static func entries(in log: Data) -> (entries: [Entry], torn: Bool) {
        let bytes = [UInt8](log)
        var entries: [Entry] = []
        var index = 0
        while index < bytes.count {
            guard let count = field(bytes, &index, radix: 10), let length = Int(exactly: count),
                let sum = field(bytes, &index, radix: 16), length <= bytes.count - index - 1, bytes[index + length] == UInt8(ascii: "\n")
            else { return (entries, true) }
            let json = Data(bytes[index..<index + length])
            guard checksum(json) == sum, let entry = try? JSONCoding.decoder().decode(Entry.self, from: json) else {
                return (entries, true)
            }
            entries.append(entry)
            index += length + 1
        }
        return (entries, false)
    }

    /// A number of up to 16 digits followed by a space, read at `index`, which moves past it.
    private static func field(_ bytes: [UInt8], _ index: inout Int, radix: Int) -> UInt64? {
        var end = index
        while end < bytes.count, end - index < 17, bytes[end] != UInt8(ascii: " ") { end += 1 }
        guard end < bytes.count, end > index, bytes[end] == UInt8(ascii: " "),
            let value = UInt64(String(decoding: bytes[index..<end], as: UTF8.self), radix: radix)
        else { return nil }
        index = end + 1
        return value
    }

    /// FNV-1a, 64 bits: enough to tell a torn or garbled entry from a whole one.
    static func checksum(_ data: Data) -> UInt64 {
        data.reduce(0xcbf2_9ce4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01b3 }
    }
}
