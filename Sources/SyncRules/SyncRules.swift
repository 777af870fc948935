// The state a device syncs, and the merge rules that make sync deterministic, commutative and
// idempotent: merging the same change twice, or two devices' changes in either order, gives the
// same stored state. Every rule is a maximum, a minimum or a "latest wins" on a total order.
//
// This module has no dependencies: the server (`Accounts`) stores what these rules merge, and
// `SIWAKit` merges a device's local view with the same code, so both reach the same state.

/// How far a lesson is: it only moves forward, so a merge keeps the later status
/// (`notStarted` < `inProgress` < `completed`).
public enum LessonStatus: Int, Sendable, Comparable, CaseIterable, Codable {
    /// The lesson was not begun.
    case notStarted = 0
    /// The lesson was begun and not finished.
    case inProgress = 1
    /// The lesson was finished.
    case completed = 2

    /// The status of its name in the server's API; nil for an unknown name.
    /// - Parameter name: `not_started`, `in_progress` or `completed`.
    public init?(name: String) {
        switch name {
        case "not_started": self = .notStarted
        case "in_progress": self = .inProgress
        case "completed": self = .completed
        default: return nil
        }
    }

    /// The status's name in the server's API: `not_started`, `in_progress` or `completed`.
    public var name: String {
        switch self {
        case .notStarted: "not_started"
        case .inProgress: "in_progress"
        case .completed: "completed"
        }
    }

    /// Whether `lhs` comes before `rhs`: `notStarted` < `inProgress` < `completed`.
    /// - Parameters:
    ///   - lhs: a status.
    ///   - rhs: another status.
    public static func < (lhs: LessonStatus, rhs: LessonStatus) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A lesson's progress or an achievement: kept per key, merged by its rules.
public protocol SyncItem: Sendable, Equatable {
    /// The type of the key that identifies an item.
    associatedtype Key: Hashable & Sendable
    /// What identifies the item: two items of the same key are states of the same thing and merge.
    var key: Key { get }
    /// This item and `other` (of the same key) merged.
    /// - Parameter other: an item of the same key.
    /// - Returns: the merged item; the same whichever of the two is `self`.
    func merged(with other: Self) -> Self
}

/// A lesson's key: its belief system and its own id.
public struct LessonKey: Hashable, Sendable, Comparable {
    /// The id of the lesson's belief system.
    public let beliefSystemID: String
    /// The lesson's id within its belief system.
    public let lessonID: String

    /// The key of the lesson `lessonID` of the belief system `beliefSystemID`.
    /// - Parameters:
    ///   - beliefSystemID: the id of the lesson's belief system.
    ///   - lessonID: the lesson's id within its belief system.
    public init(beliefSystemID: String, lessonID: String) {
        self.beliefSystemID = beliefSystemID
        self.lessonID = lessonID
    }

    /// Whether `lhs` sorts before `rhs`: by belief system, then by lesson.
    /// - Parameters:
    ///   - lhs: a key.
    ///   - rhs: another key.
    public static func < (lhs: LessonKey, rhs: LessonKey) -> Bool {
        (lhs.beliefSystemID, lhs.lessonID) < (rhs.beliefSystemID, rhs.lessonID)
    }
}

/// One lesson's progress, identified by (belief system, lesson).
public struct LessonProgress: SyncItem, Codable {
    /// The id of the lesson's belief system: 1 to 128 characters of `[A-Za-z0-9._:-]`.
    public var beliefSystemID: String
    /// The lesson's id within its belief system: 1 to 128 characters of `[A-Za-z0-9._:-]`.
    public var lessonID: String
    /// How far the lesson is.
    public var status: LessonStatus
    /// The lesson's score, 0 to `SyncLimits.maximumCount`.
    public var score: Int64
    /// The XP the lesson earned, 0 to `SyncLimits.maximumCount`.
    public var earnedXP: Int64
    /// When the lesson was completed, in Unix milliseconds; nil when it was not.
    public var completedAt: Int64?

    /// A lesson's progress.
    /// - Parameters:
    ///   - beliefSystemID: the id of the lesson's belief system.
    ///   - lessonID: the lesson's id within its belief system.
    ///   - status: how far the lesson is.
    ///   - score: the lesson's score.
    ///   - earnedXP: the XP the lesson earned.
    ///   - completedAt: when the lesson was completed, in Unix milliseconds; nil when it was not.
    public init(beliefSystemID: String, lessonID: String, status: LessonStatus, score: Int64, earnedXP: Int64, completedAt: Int64?) {
        self.beliefSystemID = beliefSystemID
        self.lessonID = lessonID
        self.status = status
        self.score = score
        self.earnedXP = earnedXP
        self.completedAt = completedAt
    }

    /// The lesson's belief system and id.
    public var key: LessonKey { LessonKey(beliefSystemID: beliefSystemID, lessonID: lessonID) }

    /// Status never goes back; score and XP take the maximum; completed-at the earliest.
    /// - Parameter other: the progress of the same lesson (a precondition).
    /// - Returns: the merged progress.
    public func merged(with other: LessonProgress) -> LessonProgress {
        precondition(beliefSystemID == other.beliefSystemID && lessonID == other.lessonID, "merging different lessons")
        return LessonProgress(
            beliefSystemID: beliefSystemID, lessonID: lessonID, status: SyncRule.larger(status, other.status),
            score: SyncRule.larger(score, other.score), earnedXP: SyncRule.larger(earnedXP, other.earnedXP),
            completedAt: SyncRule.smaller(completedAt, other.completedAt))
    }
}

/// One achievement's state.
public struct AchievementProgress: SyncItem, Codable {
    /// The achievement's id: 1 to 128 characters of `[A-Za-z0-9._:-]`.
    public var achievementID: String
    /// How far the achievement is, 0 to `SyncLimits.maximumCount`.
    public var progress: Int64
    /// Whether the achievement was earned.
    public var completed: Bool
    /// When the achievement was earned, in Unix milliseconds; nil when it was not.
    public var completedAt: Int64?

    /// An achievement's state.
    /// - Parameters:
    ///   - achievementID: the achievement's id.
    ///   - progress: how far the achievement is.
    ///   - completed: whether the achievement was earned.
    ///   - completedAt: when the achievement was earned, in Unix milliseconds; nil when it was not.
    public init(achievementID: String, progress: Int64, completed: Bool, completedAt: Int64?) {
        self.achievementID = achievementID
        self.progress = progress
        self.completed = completed
        self.completedAt = completedAt
    }

    /// The achievement's id.
    public var key: String { achievementID }

    /// Progress takes the maximum, completed stays completed, completed-at the earliest.
    /// - Parameter other: the state of the same achievement (a precondition).
    /// - Returns: the merged state.
    public func merged(with other: AchievementProgress) -> AchievementProgress {
        precondition(achievementID == other.achievementID, "merging different achievements")
        return AchievementProgress(
            achievementID: achievementID, progress: SyncRule.larger(progress, other.progress),
            completed: SyncRule.larger(completed, other.completed, by: { !$0 && $1 })!,
            completedAt: SyncRule.smaller(completedAt, other.completedAt))
    }
}

/// The synced profile fields.
public struct SyncProfile: Sendable, Equatable, Codable {
    /// The XP earned in all, 0 to `SyncLimits.maximumTotalXP`.
    public var totalXP: Int64
    /// The person's level, 0 to `SyncLimits.maximumLevel`.
    public var currentLevel: Int64
    /// The person's streak in days, as of `lastActiveDate`: 0 to `SyncLimits.maximumStreakDays`.
    public var streakDays: Int64
    /// The last day the person was active: `YYYY-MM-DD`, which sorts like the date.
    public var lastActiveDate: String?

    /// A profile; every field is 0 or nil unless given.
    /// - Parameters:
    ///   - totalXP: the XP earned in all.
    ///   - currentLevel: the person's level.
    ///   - streakDays: the person's streak in days, as of `lastActiveDate`.
    ///   - lastActiveDate: the last day the person was active, `YYYY-MM-DD`.
    public init(totalXP: Int64 = 0, currentLevel: Int64 = 0, streakDays: Int64 = 0, lastActiveDate: String? = nil) {
        self.totalXP = totalXP
        self.currentLevel = currentLevel
        self.streakDays = streakDays
        self.lastActiveDate = lastActiveDate
    }

    /// Total XP and level take the maximum; the last active date the latest; the streak comes with
    /// the latest active date (the larger one when both name the same day).
    /// - Parameter other: another state of the profile.
    /// - Returns: the merged profile.
    public func merged(with other: SyncProfile) -> SyncProfile {
        let streak: Int64
        switch (lastActiveDate, other.lastActiveDate) {
        case (let mine?, let theirs?) where mine > theirs: streak = streakDays
        case (let mine?, let theirs?) where mine < theirs: streak = other.streakDays
        case (.some, nil): streak = streakDays
        case (nil, .some): streak = other.streakDays
        default: streak = SyncRule.larger(streakDays, other.streakDays)
        }
        return SyncProfile(
            totalXP: SyncRule.larger(totalXP, other.totalXP), currentLevel: SyncRule.larger(currentLevel, other.currentLevel),
            streakDays: streak, lastActiveDate: SyncRule.larger(lastActiveDate, other.lastActiveDate, by: <))
    }
}
