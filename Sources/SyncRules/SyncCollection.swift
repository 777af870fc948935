/// The kind of value a field of a declared collection holds, with its bounds.
public enum SyncFieldType: Sendable, Equatable {
    /// An integer from `minimum` to `maximum` (within ±(2^53 − 1), which JavaScript keeps exactly).
    case integer(minimum: Int64, maximum: Int64)
    /// A string of up to `maximumLength` bytes of UTF-8 (at most 8,192).
    case string(maximumLength: Int)
    /// 1 to 128 characters of `[A-Za-z0-9._:-]`.
    case id
    /// `true` or `false`.
    case boolean
    /// Unix milliseconds from 1970 to 2100.
    case time
    /// A calendar date `YYYY-MM-DD` from 2000 to 2099.
    case date
    /// One of these names, in this order (the order `.forward` follows).
    case enumeration([String])
    /// A set of up to `maximumCount` strings, each of up to `maximumLength` bytes of UTF-8.
    case stringSet(maximumCount: Int, maximumLength: Int)

    /// The type's name in a declaration file.
    public var name: String {
        switch self {
        case .integer: "integer"
        case .string: "string"
        case .id: "id"
        case .boolean: "boolean"
        case .time: "time"
        case .date: "date"
        case .enumeration: "enum"
        case .stringSet: "set"
        }
    }

    /// The rules a field of this type may merge by.
    public var rules: Set<SyncRule> {
        switch self {
        case .integer: [.maximum, .minimum, .latestWins, .counter, .withLatest]
        case .string, .id: [.maximum, .minimum, .latestWins]
        case .boolean: [.stickyTrue, .latestWins]
        case .time, .date: [.maximum, .minimum, .earliest, .latest, .latestWins]
        case .enumeration: [.forward, .latestWins]
        case .stringSet: [.union]
        }
    }

    /// Whether a key field may be of this type.
    public var canBeKey: Bool {
        switch self {
        case .id, .integer, .string, .date: true
        default: false
        }
    }
}

/// One field of a declared collection.
public struct SyncField: Sendable, Equatable {
    /// Its member name in records.
    public let name: String
    /// What it holds.
    public let type: SyncFieldType
    /// How two of its values merge; nil for a key field.
    public let rule: SyncRule?
    /// For `.withLatest`, the index (among the collection's fields) of the field whose later value
    /// this one comes with.
    public let companion: Int?
    /// The value the field takes when a record does not set it (the built-in model's counts are
    /// 0, not absent); nil for the rule's own (`emptyValue`).
    public let defaultValue: SyncValue?
    /// Whether a record must set the field (as a key field must); a record without it is refused.
    public let isRequired: Bool

    /// A field.
    /// - Parameters:
    ///   - name: its member name in records.
    ///   - type: what it holds.
    ///   - rule: how two of its values merge; nil for a key field.
    ///   - companion: for `.withLatest`, the index of the field whose later value this one comes with.
    ///   - defaultValue: the value when a record does not set it; nil for the rule's own.
    ///   - isRequired: whether a record must set it.
    public init(
        _ name: String, _ type: SyncFieldType, _ rule: SyncRule?, companion: Int? = nil, defaultValue: SyncValue? = nil,
        isRequired: Bool = false
    ) {
        self.name = name
        self.type = type
        self.rule = rule
        self.companion = companion
        self.defaultValue = defaultValue
        self.isRequired = isRequired
    }

    /// The value a field shows when no device set it: its `defaultValue`, else an empty set or
    /// counter, `false` for a sticky boolean, else `none`.
    public var emptyValue: SyncValue {
        if let defaultValue { return defaultValue }
        switch rule {
        case .union: return .strings([])
        case .counter: return .counts([])
        case .stickyTrue: return .boolean(false)
        default: return .none
        }
    }
}

/// A collection an app syncs: its records are identified by the values of its key fields (none
/// for a collection of one record per user, such as settings), and each other field merges by its
/// own rule.
public struct SyncCollection: Sendable, Equatable {
    /// Items per request and per user.
    public struct Limits: Sendable, Equatable {
        /// The most records of this collection in one sync request (1 to 500).
        public var itemsPerRequest: Int
        /// The most records of this collection a user may have, tombstones included (1 to 1,000,000).
        public var itemsPerUser: Int
        /// The most bytes one record of this collection takes as stored (its JSON), merged (256 to
        /// 1,048,576).
        public var bytesPerRecord: Int

        /// Limits.
        /// - Parameters:
        ///   - itemsPerRequest: the most records of this collection in one sync request.
        ///   - itemsPerUser: the most records of this collection a user may have.
        ///   - bytesPerRecord: the most bytes one record takes as stored.
        public init(itemsPerRequest: Int = 500, itemsPerUser: Int = 10_000, bytesPerRecord: Int = 16_384) {
            self.itemsPerRequest = itemsPerRequest
            self.itemsPerUser = itemsPerUser
            self.bytesPerRecord = bytesPerRecord
        }
    }

    /// The collection's name: 1 to 64 characters of `[A-Za-z0-9_-]`.
    public let name: String
    /// The fields that identify a record, in order.
    public let keys: [SyncField]
    /// The other fields, in order; a record's values are in this order.
    public let fields: [SyncField]
    /// How long a deleted record's tombstone is kept, in days; nil when records cannot be deleted.
    public let tombstoneDays: Int?
    /// Items per request and per user.
    public let limits: Limits

    /// A collection. `init(declaring:)` of `SyncSchema` checks a declaration; this one trusts it.
    /// - Parameters:
    ///   - name: the collection's name.
    ///   - keys: the fields that identify a record, in order.
    ///   - fields: the other fields, in order.
    ///   - tombstoneDays: how long a deleted record's tombstone is kept, in days; nil when records
    ///     cannot be deleted.
    ///   - limits: items per request and per user.
    public init(name: String, keys: [SyncField], fields: [SyncField], tombstoneDays: Int? = nil, limits: Limits = Limits()) {
        self.name = name
        self.keys = keys
        self.fields = fields
        self.tombstoneDays = tombstoneDays
        self.limits = limits
    }

    /// The member of a record that marks it deleted: a "latest wins" boolean.
    public static let deletedMember = "deleted"

    /// `lhs` and `rhs`, two states of the same record, merged field by field.
    /// - Parameters:
    ///   - lhs: a state of a record.
    ///   - rhs: another state of the same record (same key).
    /// - Returns: the merged state, the same whichever side is which.
    public func merged(_ lhs: SyncRecord, _ rhs: SyncRecord) -> SyncRecord {
        precondition(lhs.key == rhs.key, "merging different records")
        // `lhs` itself, unless a field moves: the usual merge of a record a device sends again
        // allocates nothing.
        if lhs == rhs { return lhs }
        var values: [SyncValue]?
        for index in fields.indices {
            let merged = mergedValue(index, lhs, rhs)
            if merged != lhs.values[index] {
                if values == nil { values = lhs.values }
                values![index] = merged
            }
        }
        let deleted = SyncValue.merged(lhs.deleted, rhs.deleted, by: .latestWins)
        guard values != nil || deleted != lhs.deleted else { return lhs }
        return SyncRecord(values: values ?? lhs.values, keyCount: lhs.keyCount, key: lhs.key, deleted: deleted)
    }

    /// A counter of `record` (merged) that counts more devices than
    /// `SyncLimits.maximumCounterDevices`, and more than it did in `stored`; nil when none does. (A
    /// counter's merged value may pass its field's `max`: two devices each within it add up past it,
    /// and refusing that would leave a device whose own count is valid unable to sync.)
    /// - Parameters:
    ///   - record: a record of this collection, merged.
    ///   - stored: the same record before the merge, if there was one.
    /// - Returns: the field's name and the problem, or nil.
    public func counterProblem(in record: SyncRecord, comparedTo stored: SyncRecord?) -> (field: String, problem: String)? {
        for (index, field) in fields.enumerated() where field.rule == .counter {
            guard case .counts(let counts) = record.values[index], counts.count > SyncLimits.maximumCounterDevices else { continue }
            if let stored, case .counts(let before) = stored.values[index], before.count >= counts.count { continue }
            return (field.name, "would count \(counts.count) devices, more than \(SyncLimits.maximumCounterDevices)")
        }
        return nil
    }

    /// The merged value of the field at `index`.
    private func mergedValue(_ index: Int, _ lhs: SyncRecord, _ rhs: SyncRecord) -> SyncValue {
        let field = fields[index]
        let rule = field.rule ?? .latestWins
        // The value of the side whose companion is later (a pair's lexicographic maximum).
        if rule == .withLatest, let companion = field.companion, lhs.values[companion] != rhs.values[companion] {
            return SyncValue.precedes(lhs.values[companion], rhs.values[companion]) ? rhs.values[index] : lhs.values[index]
        }
        if case .enumeration(let cases) = field.type {
            return SyncValue.merged(lhs.values[index], rhs.values[index], by: rule, order: cases)
        }
        return SyncValue.merged(lhs.values[index], rhs.values[index], by: rule)
    }

}

/// One record of a declared collection: its key and its fields' values.
public struct SyncRecord: Sendable, Hashable {
    /// The values of the collection's other fields, in order, then those of its key fields: one
    /// array, so that a record is one allocation (a sync reads and merges hundreds).
    public var values: [SyncValue]
    /// How many of `values`, at the end, are the key's.
    let keyCount: Int
    /// The key as one string, which identifies the record within its collection and orders records:
    /// a one-field key's value as text, or the values as a JSON array.
    public var key: String
    /// Whether the record is deleted: `none`, or a "latest wins" boolean.
    public var deleted: SyncValue

    /// A record.
    /// - Parameters:
    ///   - keyValues: the values of the collection's key fields, in order.
    ///   - key: the key as one string (`SyncRecordCodec.key(_:)`).
    ///   - values: the values of the collection's other fields, in order.
    ///   - deleted: `none`, or a "latest wins" boolean.
    public init(keyValues: [SyncValue], key: String, values: [SyncValue], deleted: SyncValue) {
        self.init(values: values + keyValues, keyCount: keyValues.count, key: key, deleted: deleted)
    }

    /// A record of `values` (fields, then keys) whose last `keyCount` are the key's.
    init(values: [SyncValue], keyCount: Int, key: String, deleted: SyncValue) {
        self.values = values
        self.keyCount = keyCount
        self.key = key
        self.deleted = deleted
    }

    /// The values of the collection's key fields, in order.
    public var keyValues: [SyncValue] {
        get { Array(values[(values.count - keyCount)...]) }
        set {
            precondition(newValue.count == keyCount, "a key of another size")
            values.replaceSubrange((values.count - keyCount)..., with: newValue)
        }
    }

    /// Whether the latest change to the record deleted it.
    public var isDeleted: Bool {
        if case .stamped(.boolean(true), _) = deleted { return true }
        return false
    }
}
