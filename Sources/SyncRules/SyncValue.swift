// The values of a declared collection's fields, and the merge rules over them.
//
// Every rule is a join (commutative, associative, idempotent) on a total order or a product of
// them, so any two replicas that have merged the same changes, in any order and any number of
// times, hold the same value.

/// When and where a "latest wins" value was set: a device's clock in Unix milliseconds, and the
/// device's id to order two changes of the same millisecond.
public struct SyncStamp: Sendable, Hashable, Comparable {
    /// When the value was set, in Unix milliseconds by the device's clock.
    public var at: Int64
    /// The id of the device that set it.
    public var device: String

    /// A stamp.
    /// - Parameters:
    ///   - at: when the value was set, in Unix milliseconds by the device's clock.
    ///   - device: the id of the device that set it.
    public init(at: Int64, device: String) {
        self.at = at
        self.device = device
    }

    /// Whether `lhs` was set before `rhs`: by time, then by device id.
    /// - Parameters:
    ///   - lhs: a stamp.
    ///   - rhs: another stamp.
    public static func < (lhs: SyncStamp, rhs: SyncStamp) -> Bool { (lhs.at, lhs.device) < (rhs.at, rhs.device) }
}

/// A field's value in a record of a declared collection.
public enum SyncValue: Sendable, Hashable {
    /// No value: what a device did not send, and what every rule's merge leaves to the other side.
    case none
    /// An integer, a time (Unix milliseconds) or a boolean's stored form is its own case.
    case integer(Int64)
    /// A string, a date (`YYYY-MM-DD`), an id or an enumeration's case name.
    case string(String)
    /// A boolean.
    case boolean(Bool)
    /// A set of strings, sorted, each once.
    case strings([String])
    /// A counter: each device's own count, sorted by device id; its value is their sum.
    case counts([SyncCount])
    /// A "latest wins" value with the stamp of the change that set it.
    indirect case stamped(SyncValue, SyncStamp)

    /// The rank of each case in `SyncValue.precedes`.
    private var rank: Int {
        switch self {
        case .none: 0
        case .boolean: 1
        case .integer: 2
        case .string: 3
        case .strings: 4
        case .counts: 5
        case .stamped: 6
        }
    }

    /// A total order on values, used only to settle two different "latest wins" values of one stamp
    /// (which a device should never send), so that the merge stays commutative even then.
    /// - Parameters:
    ///   - lhs: a value.
    ///   - rhs: another value.
    /// - Returns: whether `lhs` comes before `rhs`.
    public static func precedes(_ lhs: SyncValue, _ rhs: SyncValue) -> Bool {
        switch (lhs, rhs) {
        case (.boolean(let a), .boolean(let b)): !a && b
        case (.integer(let a), .integer(let b)): a < b
        case (.string(let a), .string(let b)): a < b
        case (.strings(let a), .strings(let b)): a.lexicographicallyPrecedes(b)
        case (.counts(let a), .counts(let b)): a.lexicographicallyPrecedes(b)
        case (.stamped(let a, let stampA), .stamped(let b, let stampB)): stampA != stampB ? stampA < stampB : precedes(a, b)
        default: lhs.rank < rhs.rank
        }
    }
}

/// One device's count in a counter.
public struct SyncCount: Sendable, Hashable, Comparable {
    /// The device's id.
    public var device: String
    /// How much that device counted, in all.
    public var count: Int64

    /// A device's count.
    /// - Parameters:
    ///   - device: the device's id.
    ///   - count: how much that device counted, in all.
    public init(device: String, count: Int64) {
        self.device = device
        self.count = count
    }

    /// Whether `lhs` sorts before `rhs`: by device, then by count.
    /// - Parameters:
    ///   - lhs: a count.
    ///   - rhs: another count.
    public static func < (lhs: SyncCount, rhs: SyncCount) -> Bool { (lhs.device, lhs.count) < (rhs.device, rhs.count) }
}

/// How a field's values merge: a closed set of rules, each deterministic, commutative, associative
/// and idempotent by construction. A value beats `none` under every rule.
public enum SyncRule: String, Sendable, CaseIterable, Codable {
    /// The larger value (integers, strings, times, dates).
    case maximum
    /// The smaller value (integers, strings, times, dates).
    case minimum
    /// The earlier time or date.
    case earliest
    /// The later time or date.
    case latest
    /// The later case of an enumeration in its declared order: it never goes back.
    case forward
    /// The union of two sets of strings.
    case union
    /// The value set by the latest change, by (device time, device id).
    case latestWins
    /// A grow-only counter: each device's count is the larger of the two, the value their sum.
    case counter
    /// True once either side is true.
    case stickyTrue
    /// The value that comes with the later value of another field of the record, the larger one
    /// when both sides have the same (the built-in profile's streak, which goes with its last
    /// active date).
    case withLatest
}

extension SyncValue {
    /// `lhs` and `rhs` merged by `rule`; `order` is an enumeration's cases, for `.forward`.
    /// - Parameters:
    ///   - lhs: a value.
    ///   - rhs: another value of the same field.
    ///   - rule: the field's rule (`.withLatest` merges as `.maximum` here; the record decides).
    ///   - order: for `.forward`, the enumeration's cases in order.
    /// - Returns: the merged value, the same whichever side is which.
    public static func merged(_ lhs: SyncValue, _ rhs: SyncValue, by rule: SyncRule, order: [String] = []) -> SyncValue {
        if lhs == rhs { return lhs }
        if case .none = lhs { return rhs }
        if case .none = rhs { return lhs }
        // By the rule first, then the values' shapes (a switch over a tuple of the values would copy them).
        switch rule {
        case .minimum, .earliest: return SyncRule.smaller(lhs, rhs, by: precedes)!
        case .forward:
            if case .string(let a) = lhs, case .string(let b) = rhs {
                let (rankA, rankB) = (order.firstIndex(of: a) ?? -1, order.firstIndex(of: b) ?? -1)
                return rankA != rankB ? (rankA > rankB ? lhs : rhs) : (a > b ? lhs : rhs)
            }
        case .union:
            if case .strings(let a) = lhs, case .strings(let b) = rhs { return .strings(Array(Set(a).union(b)).sorted()) }
        case .counter:
            if case .counts(let a) = lhs, case .counts(let b) = rhs { return .counts(mergedCounts(a, b)) }
        default: break
        }
        // `maximum`, `latest`, `withLatest`, `stickyTrue` (false before true), `latestWins` (by stamp,
        // then value), and values of different shapes (a declaration changed its type): the total
        // order decides.
        return SyncRule.larger(lhs, rhs, by: precedes)!
    }

    /// Two counters merged: each device's larger count.
    static func mergedCounts(_ a: [SyncCount], _ b: [SyncCount]) -> [SyncCount] {
        var counts: [String: Int64] = [:]
        for entry in a + b { counts[entry.device] = max(counts[entry.device] ?? entry.count, entry.count) }
        return counts.map { SyncCount(device: $0.key, count: $0.value) }.sorted()
    }

    /// A counter's value: the sum of every device's count.
    public var total: Int64 {
        guard case .counts(let counts) = self else { return 0 }
        return counts.reduce(0) { $0 &+ $1.count }
    }
}
