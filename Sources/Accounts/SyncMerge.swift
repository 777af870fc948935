/// The state a device syncs, and the merge rules that make sync deterministic, commutative and
/// idempotent: merging the same change twice, or two devices' changes in either order, gives the
/// same stored state. Every rule is a maximum, a minimum or a "latest wins" on a total order.
package enum LessonStatus: Int, Sendable, Comparable, CaseIterable {
    case notStarted = 0
    case inProgress = 1
    case completed = 2

    package init?(name: String) {
        switch name {
        case "not_started": self = .notStarted
        case "in_progress": self = .inProgress
        case "completed": self = .completed
        default: return nil
        }
    }

    package var name: String {
        switch self {
        case .notStarted: "not_started"
        case .inProgress: "in_progress"
        case .completed: "completed"
        }
    }

    package static func < (lhs: LessonStatus, rhs: LessonStatus) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A lesson's progress or an achievement: kept per key, merged by its rules.
package protocol SyncItem: Sendable, Equatable {
    associatedtype Key: Hashable & Sendable
    var key: Key { get }
    /// This item and `other` (of the same key) merged.
    func merged(with other: Self) -> Self
}

/// A lesson's key: its belief system and its own id.
package struct LessonKey: Hashable, Sendable {
    let beliefSystemID: String
    let lessonID: String
}

/// One lesson's progress, identified by (belief system, lesson).
package struct LessonProgress: SyncItem {
    package var beliefSystemID: String
    package var lessonID: String
    package var status: LessonStatus
    package var score: Int64
    package var earnedXP: Int64
    /// Unix milliseconds.
    package var completedAt: Int64?

    package init(beliefSystemID: String, lessonID: String, status: LessonStatus, score: Int64, earnedXP: Int64, completedAt: Int64?) {
        self.beliefSystemID = beliefSystemID
        self.lessonID = lessonID
        self.status = status
        self.score = score
        self.earnedXP = earnedXP
        self.completedAt = completedAt
    }

    package var key: LessonKey { LessonKey(beliefSystemID: beliefSystemID, lessonID: lessonID) }

    /// Status never goes back; score and XP take the maximum; completed-at the earliest.
    package func merged(with other: LessonProgress) -> LessonProgress {
        precondition(beliefSystemID == other.beliefSystemID && lessonID == other.lessonID, "merging different lessons")
        return LessonProgress(
            beliefSystemID: beliefSystemID, lessonID: lessonID, status: max(status, other.status), score: max(score, other.score),
            earnedXP: max(earnedXP, other.earnedXP), completedAt: earliest(completedAt, other.completedAt))
    }
}

/// One achievement's state.
package struct AchievementProgress: SyncItem {
    package var achievementID: String
    package var progress: Int64
    package var completed: Bool
    /// Unix milliseconds.
    package var completedAt: Int64?

    package init(achievementID: String, progress: Int64, completed: Bool, completedAt: Int64?) {
        self.achievementID = achievementID
        self.progress = progress
        self.completed = completed
        self.completedAt = completedAt
    }

    package var key: String { achievementID }

    /// Progress takes the maximum, completed stays completed, completed-at the earliest.
    package func merged(with other: AchievementProgress) -> AchievementProgress {
        precondition(achievementID == other.achievementID, "merging different achievements")
        return AchievementProgress(
            achievementID: achievementID, progress: max(progress, other.progress), completed: completed || other.completed,
            completedAt: earliest(completedAt, other.completedAt))
    }
}

/// The synced profile fields.
package struct SyncProfile: Sendable, Equatable {
    package var totalXP: Int64
    package var currentLevel: Int64
    package var streakDays: Int64
    /// `YYYY-MM-DD`, which sorts like the date.
    package var lastActiveDate: String?

    package init(totalXP: Int64 = 0, currentLevel: Int64 = 0, streakDays: Int64 = 0, lastActiveDate: String? = nil) {
        self.totalXP = totalXP
        self.currentLevel = currentLevel
        self.streakDays = streakDays
        self.lastActiveDate = lastActiveDate
    }

    /// Total XP and level take the maximum; the last active date the latest; the streak comes with
    /// the latest active date (the larger one when both name the same day).
    package func merged(with other: SyncProfile) -> SyncProfile {
        let streak: Int64
        switch (lastActiveDate, other.lastActiveDate) {
        case (let mine?, let theirs?) where mine > theirs: streak = streakDays
        case (let mine?, let theirs?) where mine < theirs: streak = other.streakDays
        case (.some, nil): streak = streakDays
        case (nil, .some): streak = other.streakDays
        default: streak = max(streakDays, other.streakDays)
        }
        return SyncProfile(
            totalXP: max(totalXP, other.totalXP), currentLevel: max(currentLevel, other.currentLevel), streakDays: streak,
            lastActiveDate: max(lastActiveDate ?? "", other.lastActiveDate ?? "").nilIfEmpty)
    }
}

/// The earlier of two optional times; a time beats none.
func earliest(_ a: Int64?, _ b: Int64?) -> Int64? {
    switch (a, b) {
    case (let a?, let b?): min(a, b)
    case (let a?, nil): a
    case (nil, let b?): b
    case (nil, nil): nil
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
