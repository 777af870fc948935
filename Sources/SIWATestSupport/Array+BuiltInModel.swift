package import SyncRules

/// The built-in model in a list of a sync's records, as tests read it.
extension Array where Element == SyncWire.Item {
    /// The records of `progress`, as lessons, in order.
    package var lessons: [LessonProgress] {
        filter { $0.collection == SyncWire.progress }.compactMap { LessonProgress(record: $0.record) }
    }

    /// The records of `achievements`, as achievements, in order.
    package var achievements: [AchievementProgress] {
        filter { $0.collection == SyncWire.achievements }.compactMap { AchievementProgress(record: $0.record) }
    }

    /// The last record that is a profile (of `profile`, whatever the declared collections before it).
    package var profile: SyncProfile? {
        lazy.filter { $0.collection > SyncWire.achievements }.compactMap { SyncProfile(record: $0.record) }.last
    }
}
