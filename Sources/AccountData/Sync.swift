package import SyncRules

/// What a device sends to `POST /sync`, already validated.
package struct SyncChanges: Sendable {
    /// The last change version the device has seen; nil for everything.
    package var cursor: UInt64?
    package var profile: SyncProfile?
    package var progress: [LessonProgress]
    package var achievements: [AchievementProgress]

    package init(cursor: UInt64?, profile: SyncProfile?, progress: [LessonProgress], achievements: [AchievementProgress]) {
        self.cursor = cursor
        self.profile = profile
        self.progress = progress
        self.achievements = achievements
    }
}

/// What changed for the user since the device's cursor, with the new cursor.
package struct SyncDelta: Sendable, Equatable {
    package var cursor: UInt64
    /// The profile when it changed since the cursor (or always, for a full sync).
    package var profile: SyncProfile?
    package var progress: [LessonProgress]
    package var achievements: [AchievementProgress]
    /// How many stored rows (progress, achievements, profile) this sync changed.
    package var changed: Int

    package init(
        cursor: UInt64, profile: SyncProfile?, progress: [LessonProgress], achievements: [AchievementProgress], changed: Int
    ) {
        self.cursor = cursor
        self.profile = profile
        self.progress = progress
        self.achievements = achievements
        self.changed = changed
    }
}
