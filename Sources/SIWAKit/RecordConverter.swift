import Foundation
import StrictJSON
import SyncRules

/// The records of declared collections on a device: converted between the app's structs and the
/// records the shared codec reads, merged by the collection's rules.
struct RecordConverter {
    let codec: SyncRecordCodec
    var collection: SyncCollection { codec.collection }

    /// The record in the codec's form, read and checked as the server reads it.
    /// - Throws: `SIWAError.invalidChange` naming the member the server would refuse.
    func record(_ wire: JSONValue) throws -> SyncRecord {
        var reader = JSONReader(Array(try wire.data()))
        let result: Result<SyncRecord, SyncRecordCodec.Problem>
        do {
            result = try codec.read(&reader, path: collection.name)
            try reader.end()
        } catch {
            throw SIWAError.invalidChange("\(collection.name): not a record: \(error)")
        }
        switch result {
        case .success(let record): return record
        case .failure(let problem): throw SIWAError.invalidChange(problem.message)
        }
    }

    /// A stored or received record, as the codec writes it.
    func record(text: String) -> SyncRecord? {
        var reader = JSONReader(Array(text.utf8))
        guard case .success(let record)? = try? codec.read(&reader, path: collection.name, checked: false) else { return nil }
        return record
    }

    func text(_ record: SyncRecord) -> String { String(decoding: codec.json(record), as: UTF8.self) }

    /// The app's struct as a change of the record `current` (nil when the device has none): plain
    /// values become "latest wins" values stamped `stamp` where they differ from the current ones,
    /// and counters this device's own count, raised by what the total grew.
    func change(of plain: JSONValue, from current: SyncRecord?, stamp: SyncStamp) throws -> SyncRecord {
        guard case .object(var members) = plain else {
            throw SIWAError.invalidChange("\(collection.name): a record must encode as an object")
        }
        members[SyncCollection.deletedMember] = nil
        for (index, field) in collection.fields.enumerated() {
            let value = members[field.name] ?? .null
            let old = current?.values[index] ?? field.emptyValue
            switch field.rule {
            case .latestWins:
                if case .stamped(let inner, let oldStamp) = old, Self.plain(inner) == value {
                    members[field.name] = Self.stamped(value, oldStamp)
                } else if value == .null, old == .none {
                    members[field.name] = .null
                } else {
                    members[field.name] = Self.stamped(value, stamp)
                }
            case .counter:
                var counts: [String: JSONValue] = [:]
                if case .counts(let existing) = old { for count in existing { counts[count.device] = .integer(count.count) } }
                if case .integer(let total) = value, total > old.total {
                    var mine: Int64 = 0
                    if case .integer(let count)? = counts[stamp.device] { mine = count }
                    counts[stamp.device] = .integer(mine + total - old.total)
                }
                members[field.name] = .object(counts)
            default: break
            }
        }
        guard collection.tombstoneDays != nil else { return try record(.object(members)) }
        // A save restores a deleted record, and an edit counts as later than a deletion it did not
        // see; a save that changes nothing keeps the record's deletion stamp (a no-op on a device
        // that was offline must not undo another device's later deletion).
        members[SyncCollection.deletedMember] = Self.stamped(.bool(false), stamp)
        let change = try record(.object(members))
        if let current, !current.isDeleted,
            Array(change.values.prefix(collection.fields.count)) == Array(current.values.prefix(collection.fields.count))
        {
            var unchanged = change
            unchanged.deleted = current.deleted
            return unchanged
        }
        return change
    }

    /// A change that adds `amount` to this device's count in the counter `field` of the record whose
    /// key fields `members` holds (`current` in the view, if any): the current record as it is (the
    /// merge leaves its values as they are) with this device's count alone in the counter, checked
    /// as the server checks it.
    /// - Throws: `SIWAError.invalidChange` when `field` is not a counter of the collection, the count
    ///   would pass the field's `max`, or a record the view does not hold lacks a required field.
    func increment(_ field: String, by amount: Int64, of members: [String: JSONValue], current: SyncRecord?, device: String) throws
        -> SyncRecord
    {
        guard let index = collection.fields.firstIndex(where: { $0.name == field }), collection.fields[index].rule == .counter else {
            throw SIWAError.invalidChange(
                "\(collection.name).\(field) is not a counter (\"merge\": \"counter\") of the collection's declaration")
        }
        var mine: Int64 = 0
        if case .counts(let counts)? = current?.values[index] { mine = counts.first { $0.device == device }?.count ?? 0 }
        let (count, overflow) = mine.addingReportingOverflow(amount)
        guard !overflow else { throw SIWAError.invalidChange("\(collection.name).\(field): this device's count would overflow") }
        var change: SyncRecord
        if let current {
            change = current
        } else {
            var keys: [String: JSONValue] = [:]
            for key in collection.keys { keys[key.name] = members[key.name] ?? .null }
            change = try record(.object(keys))
        }
        change.values[index] = .counts([SyncCount(device: device, count: count)])
        return try record(try JSONValue.parse(codec.json(change).data))
    }

    /// A deletion of the record of `key` (the app's struct, of which only the key fields count).
    func deletion(of plain: JSONValue, stamp: SyncStamp) throws -> SyncRecord {
        guard collection.tombstoneDays != nil else {
            throw SIWAError.invalidChange("records of \(collection.name) cannot be deleted: its declaration has no deletion")
        }
        guard case .object(let members) = plain else {
            throw SIWAError.invalidChange("\(collection.name): a record must encode as an object")
        }
        var keys: [String: JSONValue] = [:]
        for field in collection.keys { keys[field.name] = members[field.name] ?? .null }
        keys[SyncCollection.deletedMember] = Self.stamped(.bool(true), stamp)
        return try record(.object(keys))
    }

    /// The record as the app's struct sees it: "latest wins" values plain, counters their totals.
    func plain(_ record: SyncRecord) throws -> JSONValue {
        guard case .object(var members) = try JSONValue.parse(codec.json(record).data) else { return .null }
        members[SyncCollection.deletedMember] = nil
        for (index, field) in collection.fields.enumerated() {
            switch (field.rule, record.values[index]) {
            case (.latestWins, .stamped(let inner, _)): members[field.name] = Self.plain(inner)
            case (.latestWins, _): members[field.name] = .null
            case (.counter, let counts): members[field.name] = .integer(counts.total)
            default: break
            }
        }
        return .object(members)
    }

    static func stamped(_ value: JSONValue, _ stamp: SyncStamp) -> JSONValue {
        .object(["value": value, "at": .integer(stamp.at), "device": .string(stamp.device)])
    }

    /// A plain value as JSON.
    static func plain(_ value: SyncValue) -> JSONValue {
        switch value {
        case .none: .null
        case .integer(let value): .integer(value)
        case .string(let value): .string(value)
        case .boolean(let value): .bool(value)
        case .strings(let values): .array(values.map { .string($0) })
        case .counts: .integer(value.total)
        case .stamped(let inner, _): plain(inner)
        }
    }
}

extension [UInt8] {
    fileprivate var data: Data { Data(self) }
}
