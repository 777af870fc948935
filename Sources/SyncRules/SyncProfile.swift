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

extension SyncProfile {
    /// The profile as the one record of the built-in `profile` collection.
    public var record: SyncRecord {
        SyncRecord(
            keyValues: [], key: "",
            values: [.integer(totalXP), .integer(currentLevel), .integer(streakDays), lastActiveDate.map(SyncValue.string) ?? .none],
            deleted: .none)
    }

    /// The profile of the record of the built-in `profile` collection; nil for another record.
    /// - Parameter record: the record of `profile`.
    public init?(record: SyncRecord) {
        let values = record.values
        guard values.count == 4, case .integer(let totalXP) = values[0], case .integer(let currentLevel) = values[1],
            case .integer(let streakDays) = values[2]
        else { return nil }
        let lastActiveDate: String?
        switch values[3] {
        case .string(let date): lastActiveDate = date
        case .none: lastActiveDate = nil
        default: return nil
        }
        self.init(totalXP: totalXP, currentLevel: currentLevel, streakDays: streakDays, lastActiveDate: lastActiveDate)
    }
}
