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
