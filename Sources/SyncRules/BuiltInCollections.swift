/// The built-in model (lessons, achievements, the profile) as declarations of the declared
/// collections' engine: the same rules, the same bounds. Its typed structs (`LessonProgress`,
/// `AchievementProgress`, `SyncProfile`) merge with the same rule functions, and the tests check
/// that they merge exactly as these declarations do.
extension SyncSchema {
    /// Lessons, achievements and the profile, as the `progress`, `achievements` and `profile`
    /// members of a sync.
    public static let builtIn = SyncSchema(collections: [
        SyncCollection(
            name: "progress",
            keys: [SyncField("beliefSystemId", .id, nil), SyncField("lessonId", .id, nil)],
            fields: [
                SyncField("status", .enumeration(LessonStatus.allCases.map(\.name)), .forward, isRequired: true),
                SyncField("score", .integer(minimum: 0, maximum: SyncLimits.maximumCount), .maximum, defaultValue: .integer(0)),
                SyncField("earnedXp", .integer(minimum: 0, maximum: SyncLimits.maximumCount), .maximum, defaultValue: .integer(0)),
                SyncField("completedAt", .time, .earliest),
            ],
            limits: .init(itemsPerRequest: SyncLimits.maximumItems, itemsPerUser: 1_000_000)),
        SyncCollection(
            name: "achievements",
            keys: [SyncField("achievementId", .id, nil)],
            fields: [
                SyncField("progress", .integer(minimum: 0, maximum: SyncLimits.maximumCount), .maximum, defaultValue: .integer(0)),
                SyncField("completed", .boolean, .stickyTrue),
                SyncField("completedAt", .time, .earliest),
            ],
            limits: .init(itemsPerRequest: SyncLimits.maximumItems, itemsPerUser: 1_000_000)),
        SyncCollection(
            name: "profile", keys: [],
            fields: [
                SyncField("totalXp", .integer(minimum: 0, maximum: SyncLimits.maximumTotalXP), .maximum, defaultValue: .integer(0)),
                SyncField("currentLevel", .integer(minimum: 0, maximum: SyncLimits.maximumLevel), .maximum, defaultValue: .integer(0)),
                SyncField(
                    "streakDays", .integer(minimum: 0, maximum: SyncLimits.maximumStreakDays), .withLatest, companion: 3,
                    defaultValue: .integer(0)),
                SyncField("lastActiveDate", .date, .latest),
            ],
            limits: .init(itemsPerRequest: 1, itemsPerUser: 1)),
    ])
}

extension SyncRule {
    /// The larger of two values by `precedes`; a value beats none. The one maximum of every rule
    /// that takes one (`maximum`, `latest`, `forward`, `latestWins`, `stickyTrue`).
    /// - Parameters:
    ///   - a: a value, or none.
    ///   - b: another value, or none.
    ///   - precedes: a strict total order.
    @inlinable public static func larger<Value>(_ a: Value?, _ b: Value?, by precedes: (Value, Value) -> Bool) -> Value? {
        guard let a else { return b }
        guard let b else { return a }
        return precedes(a, b) ? b : a
    }

    /// The smaller of two values by `precedes`; a value beats none (`minimum`, `earliest`).
    /// - Parameters:
    ///   - a: a value, or none.
    ///   - b: another value, or none.
    ///   - precedes: a strict total order.
    @inlinable public static func smaller<Value>(_ a: Value?, _ b: Value?, by precedes: (Value, Value) -> Bool) -> Value? {
        guard let a else { return b }
        guard let b else { return a }
        return precedes(b, a) ? b : a
    }

    /// `larger(_:_:by:)` by `<`.
    @inlinable public static func larger<Value: Comparable>(_ a: Value, _ b: Value) -> Value { larger(a, b, by: <)! }

    /// `smaller(_:_:by:)` by `<`, a value beating none.
    @inlinable public static func smaller<Value: Comparable>(_ a: Value?, _ b: Value?) -> Value? { smaller(a, b, by: <) }
}

// The built-in model's types as records of its declarations: what a sync sends and stores.

extension LessonProgress {
    /// The lesson as a record of the built-in `progress` collection.
    public var record: SyncRecord {
        let keys: [SyncValue] = [.string(beliefSystemID), .string(lessonID)]
        return SyncRecord(
            keyValues: keys, key: SyncRecordCodec.key(keys),
            values: [.string(status.name), .integer(score), .integer(earnedXP), completedAt.map(SyncValue.integer) ?? .none],
            deleted: .none)
    }

    /// The lesson of a record of the built-in `progress` collection; nil for another record.
    /// - Parameter record: a record of `progress`.
    public init?(record: SyncRecord) {
        let values = record.values
        guard values.count == 6, case .string(let statusName) = values[0], let status = LessonStatus(name: statusName),
            case .integer(let score) = values[1], case .integer(let earnedXP) = values[2], case .string(let beliefSystemID) = values[4],
            case .string(let lessonID) = values[5]
        else { return nil }
        let completedAt: Int64?
        switch values[3] {
        case .integer(let time): completedAt = time
        case .none: completedAt = nil
        default: return nil
        }
        self.init(
            beliefSystemID: beliefSystemID, lessonID: lessonID, status: status, score: score, earnedXP: earnedXP, completedAt: completedAt)
    }
}

extension AchievementProgress {
    /// The achievement as a record of the built-in `achievements` collection.
    public var record: SyncRecord {
        SyncRecord(
            keyValues: [.string(achievementID)], key: achievementID,
            values: [.integer(progress), .boolean(completed), completedAt.map(SyncValue.integer) ?? .none], deleted: .none)
    }

    /// The achievement of a record of the built-in `achievements` collection; nil for another record.
    /// - Parameter record: a record of `achievements`.
    public init?(record: SyncRecord) {
        let values = record.values
        guard values.count == 4, case .integer(let progress) = values[0], case .boolean(let completed) = values[1],
            case .string(let achievementID) = values[3]
        else { return nil }
        let completedAt: Int64?
        switch values[2] {
        case .integer(let time): completedAt = time
        case .none: completedAt = nil
        default: return nil
        }
        self.init(achievementID: achievementID, progress: progress, completed: completed, completedAt: completedAt)
    }
}

extension SyncProfile {
    /// The profile as the one record of the built-in `profile` collection.
    public var record: SyncRecord {
        SyncRecord(
            keyValues: [], key: "",
            values: [.integer(totalXP), .integer(currentLevel), .integer(streakDays), lastActiveDate.map(SyncValue.string) ?? .none],
            deleted: .none)
    }

    /// The profile of the record of the built-in `profile` collection; nil for another record.
    /// - Parameter record: the record of `profile`.
    public init?(record: SyncRecord) {
        let values = record.values
        guard values.count == 4, case .integer(let totalXP) = values[0], case .integer(let currentLevel) = values[1],
            case .integer(let streakDays) = values[2]
        else { return nil }
        let lastActiveDate: String?
        switch values[3] {
        case .string(let date): lastActiveDate = date
        case .none: lastActiveDate = nil
        default: return nil
        }
        self.init(totalXP: totalXP, currentLevel: currentLevel, streakDays: streakDays, lastActiveDate: lastActiveDate)
    }
}
