package import AccountData
package import SyncRules

/// An answer's built-in model as tests read it: the records of the built-in collections as
/// lessons, achievements and the profile.
extension SyncDelta {
    /// The lessons it holds, in order.
    package var progress: [LessonProgress] { records.lessons }
    /// The achievements it holds, in order.
    package var achievements: [AchievementProgress] { records.achievements }
    /// The profile it holds, if any.
    package var profile: SyncProfile? { records.profile }
    /// Its records of declared collections (neither built-in lists nor the profile).
    package var declared: [CollectionRecord] {
        records.filter { $0.collection >= SyncWire.firstDeclared && SyncProfile(record: $0.record) == nil }
    }
}
