package import StrictJSON

/// A record of a declared collection as JSON, read and written the same way by the server (requests,
/// answers and its stored rows) and by SIWAKit (the app's records):
///
///     {"workoutId": "w1", "note": {"value": "felt good", "at": 1764000000000, "device": "phone"},
///      "distance": 5200, "laps": {"phone": 3, "watch": 2}, "tags": ["run"],
///      "deleted": {"value": false, "at": 1764000000000, "device": "phone"}}
///
/// Key fields and plain fields are their JSON values; a "latest wins" field (and `deleted`) is an
/// object of its value, the device time it was set (Unix milliseconds) and the device's id; a
/// counter is an object of each device's count; a set an array. `null` or a missing member is no
/// value. Members the collection does not declare are ignored (an app may ship a field before the
/// server declares it).
package struct SyncRecordCodec: Sendable {
    package let collection: SyncCollection
    /// The key fields, the other fields, then `deleted`.
    private let names: JSONNames
    /// The longest key, as stored (`sync_records.item_key` holds 1,200 bytes).
    package static let maximumKeyBytes = 1_024
    /// Each field's value when a record does not set it, then the keys' (none).
    private let emptyValues: [SyncValue]
    /// The key fields' names, then the other fields', as JSON: quoted once.
    private let keyNames: [JSONKey]
    private let fieldNames: [JSONKey]
    /// `deleted`, `value`, `at`, `device` as JSON.
    private static let deletedName = JSONKey(SyncCollection.deletedMember)
    private static let valueName = JSONKey("value")
    private static let atName = JSONKey("at")
    private static let deviceName = JSONKey("device")

    package init(_ collection: SyncCollection) {
        self.collection = collection
        emptyValues = collection.fields.map(\.emptyValue) + collection.keys.map { _ in .none }
        names = JSONNames(collection.keys.map(\.name) + collection.fields.map(\.name) + [SyncCollection.deletedMember])
        keyNames = collection.keys.map { JSONKey($0.name) }
        fieldNames = collection.fields.map { JSONKey($0.name) }
    }

    /// The one record of a collection without key fields (one record per user, such as the
    /// profile) as it is before any device set a field: every field its empty value. Nil for a
    /// collection with keys.
    package var emptyRecord: SyncRecord? {
        collection.keys.isEmpty ? SyncRecord(values: emptyValues, keyCount: 0, key: "", deleted: .none) : nil
    }

    /// A value as read, before it is checked against its field.
    package enum Raw: Sendable {
        case string(String)
        case integer(Int64)
        case otherNumber
        case bool(Bool)
        case null
        case array([Raw])
        case object([(String, Raw)])

        package init(reading reader: inout JSONReader) throws(JSONError) {
            switch try reader.kind() {
            case .string: self = .string(try reader.string())
            case .number: self = try reader.integer().map { .integer($0) } ?? .otherNumber
            case .bool: self = .bool(try reader.bool())
            case .null:
                try reader.skipValue()
                self = .null
            case .array:
                try reader.beginArray()
                var elements: [Raw] = []
                while try reader.nextElement() { elements.append(try Raw(reading: &reader)) }
                self = .array(elements)
            case .object:
                try reader.beginObject()
                var members: [(String, Raw)] = []
                while let name = try reader.nextMember() { members.append((name, try Raw(reading: &reader))) }
                self = .object(members)
            }
        }
    }

    /// What is wrong with a record: the member's path, and what it must be.
    package struct Problem: Error, Sendable, Equatable {
        package var path: String
        package var problem: String

        package var message: String { "`\(path)` \(problem)" }
    }

    /// Reads one record, which the reader stands before, consuming it whole even when it is refused.
    /// - Parameters:
    ///   - path: the record's path in the body, for problems (`collections.workouts[3]`).
    ///   - checked: whether values are checked against their fields' bounds (a request's); a stored
    ///     row is read by type only, so that narrowing a declaration loses nothing stored.
    /// - Returns: the record, or the first problem in it.
    package func read(_ reader: inout JSONReader, path: @autoclosure () -> String, checked: Bool = true) throws(JSONError) -> Result<
        SyncRecord, Problem
    > {
        guard try reader.kind() == .object else {
            try reader.skipValue()
            return .failure(Problem(path: path(), problem: "must be an object"))
        }
        // Each value is checked as it is read; the problem reported is that of the first member in
        // the collection's order (keys, fields, `deleted`), whatever the body's order.
        let keyCount = collection.keys.count
        let fieldCount = collection.fields.count
        // The fields, then the keys.
        var values = emptyValues
        var deleted = SyncValue.none
        var problem: (index: Int, problem: Problem)?
        try reader.beginObject()
        while let index = try reader.nextMember(among: names) {
            guard index <= keyCount + fieldCount else {
                try reader.skipValue()
                continue
            }
            let raw = try Raw(reading: &reader)
            if let problem, problem.index < index { continue }
            do throws(Problem) {
                if index < keyCount {
                    values[fieldCount + index] = try value(raw, collection.keys[index].type, at: collection.keys[index].name, checked: true)
                } else if index < keyCount + fieldCount {
                    let field = collection.fields[index - keyCount]
                    values[index - keyCount] = try value(raw, of: field, at: field.name, checked: checked)
                } else {
                    deleted = try self.deleted(raw)
                }
            } catch {
                // A stored field whose declared type changed since reads as no value.
                if !checked, index >= keyCount { continue }
                problem = (index, error)
            }
        }
        for (index, field) in collection.keys.enumerated() where values[fieldCount + index] == .none {
            if problem.map({ index < $0.index }) ?? true { problem = (index, Problem(path: field.name, problem: "is required")) }
        }
        for (index, field) in collection.fields.enumerated() where field.isRequired && values[index] == .none {
            if problem.map({ keyCount + index < $0.index }) ?? true {
                problem = (keyCount + index, Problem(path: field.name, problem: "is required"))
            }
        }
        let key = problem == nil ? Self.key(values[fieldCount...]) : ""
        if problem == nil, key.utf8.count > Self.maximumKeyBytes, let first = collection.keys.first {
            problem = (
                0, Problem(path: first.name, problem: "and the other key fields make a key of more than \(Self.maximumKeyBytes) bytes")
            )
        }
        if let problem {
            // Paths are made only for a problem: within the record until here.
            return .failure(Problem(path: path() + "." + problem.problem.path, problem: problem.problem.problem))
        }
        return .success(SyncRecord(values: values, keyCount: keyCount, key: key, deleted: deleted))
    }

    /// A record's `deleted` member: a "latest wins" boolean where deletion is allowed, else none.
    private func deleted(_ raw: Raw) throws(Problem) -> SyncValue {
        let path = SyncCollection.deletedMember
        if case .null = raw { return .none }
        guard collection.tombstoneDays != nil else {
            throw Problem(path: path, problem: "is not allowed: records of \(collection.name) cannot be deleted")
        }
        return try stamped(raw, .boolean, at: path, checked: true)
    }

    /// The key of a record as one string: a one-field key's value as text (a string as it is, an
    /// integer in decimal), several ids, dates and integers joined by the unit separator (U+001F),
    /// or else the values as a JSON array.
    package static func key(_ values: some Collection<SyncValue>) -> String {
        if values.count == 1 {
            switch values.first! {
            case .string(let text): return text
            case .integer(let number): return String(number)
            default: break
            }
        }
        // Ids, dates and integers cannot hold the unit separator (nor start with "["): joined by it.
        var joined = ""
        for value in values {
            if !joined.isEmpty { joined += "\u{1F}" }
            switch value {
            case .integer(let number): joined += String(number)
            case .string(let text) where SyncLimits.isIdentifier(text): joined += text
            default: return jsonKey(values)
            }
        }
        return joined
    }

    /// A key as a JSON array, for values that are not all ids, dates and integers.
    static func jsonKey(_ values: some Collection<SyncValue>) -> String {
        var json = JSONWriter(capacity: 32)
        json.beginArray()
        for value in values { write(value, into: &json) }
        json.endArray()
        return String(decoding: json.bytes, as: UTF8.self)
    }

    /// A field's value by its rule: a "latest wins" object, a counter, or a plain value.
    private func value(_ raw: Raw, of field: SyncField, at path: String, checked: Bool) throws(Problem) -> SyncValue {
        switch field.rule {
        case .latestWins: return try stamped(raw, field.type, at: path, checked: checked)
        case .counter:
            switch raw {
            case .null: return .counts([])
            case .object(let members):
                if members.count > SyncLimits.maximumCounterDevices {
                    throw Problem(path: path, problem: "counts more than \(SyncLimits.maximumCounterDevices) devices")
                }
                var counts: [SyncCount] = []
                for (device, count) in members {
                    guard SyncLimits.isIdentifier(device) else {
                        throw Problem(path: path + "." + device, problem: "must be a device id: 1 to 128 characters of A-Z a-z 0-9 . _ : -")
                    }
                    let parsed: SyncValue
                    do throws(Problem) {
                        parsed = try value(count, field.type, at: path, checked: checked)
                    } catch {
                        throw Problem(path: path + "." + device, problem: error.problem)
                    }
                    guard case .integer(let value) = parsed else { throw Problem(path: path + "." + device, problem: "must be an integer") }
                    counts.append(SyncCount(device: device, count: value))
                }
                let counter = SyncValue.counts(counts.sorted())
                // The field's maximum bounds the sum of the counts one request sends (merged with
                // other devices' counts the value may pass it: `counterProblem`).
                if checked, case .integer(_, let maximum) = field.type, counter.total > maximum {
                    throw Problem(path: path, problem: "counts \(counter.total) in all, more than its max \(maximum)")
                }
                return counter
            default: throw Problem(path: path, problem: "must be an object of each device's count")
            }
        default:
            let value = try value(raw, field.type, at: path, checked: checked)
            if value == .none { return field.emptyValue }
            return value
        }
    }

    /// A "latest wins" value: `{"value": …, "at": …, "device": …}` or null.
    private func stamped(_ raw: Raw, _ type: SyncFieldType, at path: String, checked: Bool) throws(Problem) -> SyncValue {
        let shape = "must be {\"value\": …, \"at\": Unix milliseconds, \"device\": an id}"
        switch raw {
        case .null: return .none
        case .object(let members):
            var value: Raw = .null
            var at: Int64?
            var device: String?
            for (name, member) in members {
                switch (name, member) {
                case ("value", _): value = member
                case ("at", .integer(let time)) where (0...SyncLimits.latestTime).contains(time): at = time
                case ("device", .string(let id)) where SyncLimits.isIdentifier(id): device = id
                case ("at", _), ("device", _): throw Problem(path: path + "." + name, problem: shape)
                default: break
                }
            }
            guard let at, let device else { throw Problem(path: path, problem: shape) }
            do throws(Problem) {
                return .stamped(try self.value(value, type, at: path, checked: checked), SyncStamp(at: at, device: device))
            } catch {
                throw Problem(path: path + ".value", problem: error.problem)
            }
        default: throw Problem(path: path, problem: shape)
        }
    }

    /// A plain value of `type`; `none` for null. By the value's JSON kind first, then the type (a
    /// switch over both at once copies them).
    private func value(_ raw: Raw, _ type: SyncFieldType, at path: String, checked: Bool) throws(Problem) -> SyncValue {
        switch raw {
        case .null: return .none
        case .integer(let value):
            switch type {
            case .integer(let minimum, let maximum):
                if checked, !(minimum...maximum).contains(value) {
                    throw Problem(path: path, problem: "must be an integer from \(minimum) to \(maximum)")
                }
                return .integer(value)
            case .time:
                if checked, !(0...SyncLimits.latestTime).contains(value) {
                    throw Problem(path: path, problem: "must be Unix milliseconds before 2100")
                }
                return .integer(value)
            default: break
            }
        case .otherNumber:
            if case .integer = type { throw Problem(path: path, problem: "must be an integer") }
        case .string(let value):
            switch type {
            case .string(let length):
                if checked, value.utf8.count > length { throw Problem(path: path, problem: "must be at most \(length) bytes of UTF-8") }
                return .string(value)
            case .id:
                if !SyncLimits.isIdentifier(value) {
                    throw Problem(path: path, problem: "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -")
                }
                return .string(value)
            case .date:
                if !SyncLimits.isDate(value) { throw Problem(path: path, problem: "must be a date YYYY-MM-DD") }
                return .string(value)
            case .enumeration(let cases):
                if checked, !cases.contains(value) {
                    throw Problem(path: path, problem: "must be \(Self.oneOf(cases))")
                }
                return .string(value)
            default: break
            }
        case .bool(let value):
            if case .boolean = type { return .boolean(value) }
        case .array, .object: break
        }
        return try compound(raw, type, at: path, checked: checked)
    }

    /// `a`, `a or b`, `a, b or c`: the names an enumeration accepts.
    static func oneOf(_ names: [String]) -> String {
        guard let last = names.last, names.count > 1 else { return names.first ?? "" }
        return names.dropLast().joined(separator: ", ") + " or " + last
    }

    /// A set, or the problem of a value of the wrong type.
    private func compound(_ raw: Raw, _ type: SyncFieldType, at path: String, checked: Bool) throws(Problem) -> SyncValue {
        switch (type, raw) {
        case (.stringSet(let count, let length), .array(let elements)):
            var strings: [String] = []
            for (index, element) in elements.enumerated() {
                guard case .string(let value) = element, !checked || value.utf8.count <= length else {
                    throw Problem(path: "\(path)[\(index)]", problem: "must be a string of at most \(length) bytes of UTF-8")
                }
                strings.append(value)
            }
            let set = Array(Set(strings)).sorted()
            if checked, set.count > count { throw Problem(path: path, problem: "must hold at most \(count) strings") }
            return .strings(set)
        default: throw Problem(path: path, problem: "has the wrong type (\(type.name))")
        }
    }

    // MARK: - Writing

    /// Writes `record` as one JSON object: its keys, every field in order, and `deleted` when the
    /// collection allows deletion.
    package func write(_ record: SyncRecord, into json: inout JSONWriter) {
        json.beginObject()
        for (name, value) in zip(keyNames, record.values[fieldNames.count...]) {
            json.key(name)
            Self.write(value, into: &json)
        }
        for (name, value) in zip(fieldNames, record.values) {
            json.key(name)
            Self.write(value, into: &json)
        }
        if collection.tombstoneDays != nil {
            json.key(Self.deletedName)
            Self.write(record.deleted, into: &json)
        }
        json.endObject()
    }

    /// The record as JSON text (how the server stores it).
    package func json(_ record: SyncRecord) -> [UInt8] {
        var json = JSONWriter(capacity: 128)
        write(record, into: &json)
        return json.bytes
    }

    static func write(_ value: SyncValue, into json: inout JSONWriter) {
        switch value {
        case .none: json.null()
        case .integer(let value): json.integer(value)
        case .string(let value): json.string(value)
        case .boolean(let value): json.bool(value)
        case .strings(let values):
            json.beginArray()
            for value in values { json.string(value) }
            json.endArray()
        case .counts(let counts):
            json.beginObject()
            for count in counts {
                json.key(count.device)
                json.integer(count.count)
            }
            json.endObject()
        case .stamped(let value, let stamp):
            json.beginObject()
            json.key(valueName)
            write(value, into: &json)
            json.key(atName)
            json.integer(stamp.at)
            json.key(deviceName)
            json.string(stamp.device)
            json.endObject()
        }
    }
}
