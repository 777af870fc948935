/// What the server accepts in a sync, shared with the app so that a device never queues a change
/// the server would refuse (which would hold up every change queued after it).
public enum SyncLimits {
    /// The most lessons, and the most achievements, in one request.
    public static let maximumItems = 500
    /// Scores, XP and achievement progress: 0 to this.
    public static let maximumCount: Int64 = 1_000_000
    /// Completion times: Unix milliseconds before 2100.
    public static let latestTime: Int64 = 4_102_444_800_000
    /// The profile's total XP: 0 to this.
    public static let maximumTotalXP: Int64 = 1_000_000_000_000
    /// The profile's level: 0 to this.
    public static let maximumLevel: Int64 = 100_000
    /// The profile's streak: 0 to this many days.
    public static let maximumStreakDays: Int64 = 100_000
    /// The most devices one counter of a declared collection counts.
    public static let maximumCounterDevices = 64

    /// 1 to 128 characters of `[A-Za-z0-9._:-]`: belief system, lesson and achievement ids.
    /// - Parameter value: the id to check.
    /// - Returns: whether the server accepts `value` as an id.
    @inlinable public static func isIdentifier(_ value: String) -> Bool {
        var value = value
        // Over the UTF-8 in place: iterating `utf8` costs several times more.
        return value.withUTF8 { bytes in
            (1...128).contains(bytes.count)
                && bytes.allSatisfy { byte in
                    switch byte {
                    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                        UInt8(ascii: "0")...UInt8(ascii: "9"),
                        UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                        true
                    default: false
                    }
                }
        }
    }

    /// `YYYY-MM-DD`, a real calendar date from 2000 to 2099.
    /// - Parameter value: the date to check.
    /// - Returns: whether the server accepts `value` as a date.
    @inlinable public static func isDate(_ value: String) -> Bool {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard value.utf8.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (2000...2099).contains(year), (1...12).contains(month)
        else { return false }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        return (1...days).contains(day)
    }

    /// What the server would refuse in `lesson`, or nil.
    /// - Parameter lesson: the lesson's progress to check.
    /// - Returns: the first problem, in a sentence that names the field; nil when the server accepts it.
    public static func problem(in lesson: LessonProgress) -> String? {
        if !isIdentifier(lesson.beliefSystemID) { return "beliefSystemId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -" }
        if !isIdentifier(lesson.lessonID) { return "lessonId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -" }
        if !(0...maximumCount).contains(lesson.score) { return "score must be from 0 to \(maximumCount)" }
        if !(0...maximumCount).contains(lesson.earnedXP) { return "earnedXp must be from 0 to \(maximumCount)" }
        if let time = lesson.completedAt, !(0...latestTime).contains(time) { return "completedAt must be Unix milliseconds before 2100" }
        return nil
    }

    /// What the server would refuse in `achievement`, or nil.
    /// - Parameter achievement: the achievement's state to check.
    /// - Returns: the first problem, in a sentence that names the field; nil when the server accepts it.
    public static func problem(in achievement: AchievementProgress) -> String? {
        if !isIdentifier(achievement.achievementID) { return "achievementId must be 1 to 128 characters of A-Z a-z 0-9 . _ : -" }
        if !(0...maximumCount).contains(achievement.progress) { return "progress must be from 0 to \(maximumCount)" }
        if let time = achievement.completedAt, !(0...latestTime).contains(time) {
            return "completedAt must be Unix milliseconds before 2100"
        }
        return nil
    }

    /// What the server would refuse in `profile`, or nil.
    /// - Parameter profile: the profile to check.
    /// - Returns: the first problem, in a sentence that names the field; nil when the server accepts it.
    public static func problem(in profile: SyncProfile) -> String? {
        if !(0...maximumTotalXP).contains(profile.totalXP) { return "totalXp must be from 0 to \(maximumTotalXP)" }
        if !(0...maximumLevel).contains(profile.currentLevel) { return "currentLevel must be from 0 to \(maximumLevel)" }
        if !(0...maximumStreakDays).contains(profile.streakDays) { return "streakDays must be from 0 to \(maximumStreakDays)" }
        if let date = profile.lastActiveDate, !isDate(date) { return "lastActiveDate must be a date YYYY-MM-DD from 2000 to 2099" }
        return nil
    }
}
