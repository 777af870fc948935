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
