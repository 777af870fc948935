package import AccountData
package import SyncRules

/// The built-in model's changes as tests write them: lessons, achievements and the profile, each
/// sent as a record of its built-in collection.
extension SyncChanges {
    /// Changes of the built-in model and of declared collections.
    /// - Parameters:
    ///   - cursor: where the device is; nil for everything.
    ///   - profile: the profile, if the device sends one.
    ///   - progress: lessons.
    ///   - achievements: achievements.
    ///   - declared: records of declared collections, each with its collection's index in `wire`.
    ///   - limit: the most items an answer may hold.
    ///   - wire: the sync's collections (the profile's index follows the declared ones).
    package init(
        cursor: SyncCursor?, profile: SyncProfile?, progress: [LessonProgress], achievements: [AchievementProgress],
        declared: [CollectionRecord] = [], limit: Int? = nil, wire: SyncWire = .builtIn
    ) {
        var records = progress.map { CollectionRecord(collection: SyncWire.progress, record: $0.record) }
        records += achievements.map { CollectionRecord(collection: SyncWire.achievements, record: $0.record) }
        records += declared
        if let profile { records.append(CollectionRecord(collection: wire.profile, record: profile.record)) }
        self.init(cursor: cursor, records: records, limit: limit)
    }

    /// The lessons it sends, in order.
    package var progress: [LessonProgress] { records.lessons }
    /// The achievements it sends, in order.
    package var achievements: [AchievementProgress] { records.achievements }
    /// The profile it sends, if any.
    package var profile: SyncProfile? { records.profile }
}
