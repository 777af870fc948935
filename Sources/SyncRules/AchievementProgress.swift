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

extension AchievementProgress {
    /// The achievement as a record of the built-in `achievements` collection.
    public var record: SyncRecord {
        SyncRecord(
            keyValues: [.string(achievementID)], key: achievementID,
            values: [.integer(progress), .boolean(completed), completedAt.map(SyncValue.integer) ?? .none], deleted: .none)
    }

    /// The achievement of a record of the built-in `achievements` collection; nil for another record.
    /// - Parameter record: a record of `achievements`.
    public init?(record: SyncRecord) {
        let values = record.values
        guard values.count == 4, case .integer(let progress) = values[0], case .boolean(let completed) = values[1],
            case .string(let achievementID) = values[3]
        else { return nil }
        let completedAt: Int64?
        switch values[2] {
        case .integer(let time): completedAt = time
        case .none: completedAt = nil
        default: return nil
        }
        self.init(achievementID: achievementID, progress: progress, completed: completed, completedAt: completedAt)
    }
}
