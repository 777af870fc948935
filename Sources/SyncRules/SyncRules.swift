/// The state a device syncs, and the merge rules that make sync deterministic, commutative and
/// idempotent: merging the same change twice, or two devices' changes in either order, gives the
/// same stored state. Every rule is a maximum, a minimum or a "latest wins" on a total order.
///
/// This module has no dependencies: the server (`Accounts`) stores what these rules merge, and
/// `SIWAKit` merges a device's local view with the same code, so both reach the same state.
public enum LessonStatus: Int, Sendable, Comparable, CaseIterable, Codable {
    case notStarted = 0
    case inProgress = 1
    case completed = 2

    public init?(name: String) {
        switch name {
        case "not_started": self = .notStarted
        case "in_progress": self = .inProgress
        case "completed": self = .completed
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .notStarted: "not_started"
        case .inProgress: "in_progress"
        case .completed: "completed"
        }
    }

    public static func < (lhs: LessonStatus, rhs: LessonStatus) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A lesson's progress or an achievement: kept per key, merged by its rules.
public protocol SyncItem: Sendable, Equatable {
    associatedtype Key: Hashable & Sendable
    var key: Key { get }
    /// This item and `other` (of the same key) merged.
    func merged(with other: Self) -> Self
}

/// A lesson's key: its belief system and its own id.
public struct LessonKey: Hashable, Sendable, Comparable {
    public let beliefSystemID: String
    public let lessonID: String

    public init(beliefSystemID: String, lessonID: String) {
        self.beliefSystemID = beliefSystemID
        self.lessonID = lessonID
    }

    public static func < (lhs: LessonKey, rhs: LessonKey) -> Bool {
        (lhs.beliefSystemID, lhs.lessonID) < (rhs.beliefSystemID, rhs.lessonID)
    }
}

/// One lesson's progress, identified by (belief system, lesson).
public struct LessonProgress: SyncItem, Codable {
    public var beliefSystemID: String
    public var lessonID: String
    public var status: LessonStatus
    public var score: Int64
    public var earnedXP: Int64
    /// Unix milliseconds.
    public var completedAt: Int64?

    public init(beliefSystemID: String, lessonID: String, status: LessonStatus, score: Int64, earnedXP: Int64, completedAt: Int64?) {
        self.beliefSystemID = beliefSystemID
        self.lessonID = lessonID
        self.status = status
        self.score = score
        self.earnedXP = earnedXP
        self.completedAt = completedAt
    }

    public var key: LessonKey { LessonKey(beliefSystemID: beliefSystemID, lessonID: lessonID) }

    /// Status never goes back; score and XP take the maximum; completed-at the earliest.
    public func merged(with other: LessonProgress) -> LessonProgress {
        precondition(beliefSystemID == other.beliefSystemID && lessonID == other.lessonID, "merging different lessons")
        return LessonProgress(
            beliefSystemID: beliefSystemID, lessonID: lessonID, status: max(status, other.status), score: max(score, other.score),
            earnedXP: max(earnedXP, other.earnedXP), completedAt: earliest(completedAt, other.completedAt))
    }
}

/// One achievement's state.
public struct AchievementProgress: SyncItem, Codable {
    public var achievementID: String
    public var progress: Int64
    public var completed: Bool
    /// Unix milliseconds.
    public var completedAt: Int64?

    public init(achievementID: String, progress: Int64, completed: Bool, completedAt: Int64?) {
        self.achievementID = achievementID
        self.progress = progress
        self.completed = completed
        self.completedAt = completedAt
    }

    public var key: String { achievementID }

    /// Progress takes the maximum, completed stays completed, completed-at the earliest.
    public func merged(with other: AchievementProgress) -> AchievementProgress {
        precondition(achievementID == other.achievementID, "merging different achievements")
        return AchievementProgress(
            achievementID: achievementID, progress: max(progress, other.progress), completed: completed || other.completed,
            completedAt: earliest(completedAt, other.completedAt))
    }
}

/// The synced profile fields.
public struct SyncProfile: Sendable, Equatable, Codable {
    public var totalXP: Int64
    public var currentLevel: Int64
    public var streakDays: Int64
    /// `YYYY-MM-DD`, which sorts like the date.
    public var lastActiveDate: String?

    public init(totalXP: Int64 = 0, currentLevel: Int64 = 0, streakDays: Int64 = 0, lastActiveDate: String? = nil) {
        self.totalXP = totalXP
        self.currentLevel = currentLevel
        self.streakDays = streakDays
        self.lastActiveDate = lastActiveDate
    }

    /// Total XP and level take the maximum; the last active date the latest; the streak comes with
    /// the latest active date (the larger one when both name the same day).
    public func merged(with other: SyncProfile) -> SyncProfile {
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
