package import SyncRules

/// What the incoming changes do to a stored state: the rows a sync writes.
package struct SyncMerge: Sendable {
    /// Changed lessons, merged with their stored ones.
    package var lessons: [LessonProgress]
    /// Changed achievements, merged with their stored ones.
    package var achievements: [AchievementProgress]
    /// The merged profile (the stored one when the changes leave it as it is).
    package var profile: SyncProfile
    package var profileChanged: Bool
    /// Changed records of declared collections, each with its row's JSON.
    package var records: [SyncMergedRecord] = []
    /// How many stored rows the merge changes.
    package var count: Int { lessons.count + achievements.count + records.count + (profileChanged ? 1 : 0) }

    package init(
        lessons: [LessonProgress], achievements: [AchievementProgress], profile: SyncProfile, profileChanged: Bool,
        records: [SyncMergedRecord] = []
    ) {
        self.lessons = lessons
        self.achievements = achievements
        self.profile = profile
        self.profileChanged = profileChanged
        self.records = records
    }
}

/// A record as a sync changed it, with what its row stores.
package struct SyncMergedRecord: Sendable {
    /// Its collection's index in the schema.
    package var collection: Int
    /// Its collection's name, as its row stores it.
    package var name: String
    package var record: SyncRecord
    /// The record's JSON, its row's body.
    package var json: [UInt8]
    /// Whether the user had no such record before.
    package var isNew = false

    package init(collection: Int, name: String, record: SyncRecord, json: [UInt8], isNew: Bool = false) {
        self.collection = collection
        self.name = name
        self.record = record
        self.json = json
        self.isNew = isNew
    }
}
