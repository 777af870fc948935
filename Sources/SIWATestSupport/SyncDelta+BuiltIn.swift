package import AccountData
package import SyncRules

/// An answer's built-in model as tests read it: the records of the built-in collections as
/// lessons, achievements and the profile.
extension SyncDelta {
    /// The lessons it holds, in order.
    package var progress: [LessonProgress] {
        records.filter { $0.collection == SyncWire.progress }.compactMap { LessonProgress(record: $0.record) }
    }
    /// The achievements it holds, in order.
    package var achievements: [AchievementProgress] {
        records.filter { $0.collection == SyncWire.achievements }.compactMap { AchievementProgress(record: $0.record) }
    }
    /// The profile it holds, if any.
    package var profile: SyncProfile? {
        records.lazy.filter { $0.collection > SyncWire.achievements }.compactMap { SyncProfile(record: $0.record) }.last
    }
    /// Its records of declared collections (neither built-in lists nor the profile).
    package var declared: [CollectionRecord] {
        records.filter { $0.collection >= SyncWire.firstDeclared && SyncProfile(record: $0.record) == nil }
    }
}
