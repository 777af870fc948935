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

extension LessonProgress {
    /// The lesson as a record of the built-in `progress` collection.
    public var record: SyncRecord {
        let keys: [SyncValue] = [.string(beliefSystemID), .string(lessonID)]
        return SyncRecord(
            keyValues: keys, key: SyncRecordCodec.key(keys),
            values: [.string(status.name), .integer(score), .integer(earnedXP), completedAt.map(SyncValue.integer) ?? .none],
            deleted: .none)
    }

    /// The lesson of a record of the built-in `progress` collection; nil for another record.
    /// - Parameter record: a record of `progress`.
    public init?(record: SyncRecord) {
        let values = record.values
        guard values.count == 6, case .string(let statusName) = values[0], let status = LessonStatus(name: statusName),
            case .integer(let score) = values[1], case .integer(let earnedXP) = values[2], case .string(let beliefSystemID) = values[4],
            case .string(let lessonID) = values[5]
        else { return nil }
        let completedAt: Int64?
        switch values[3] {
        case .integer(let time): completedAt = time
        case .none: completedAt = nil
        default: return nil
        }
        self.init(
            beliefSystemID: beliefSystemID, lessonID: lessonID, status: status, score: score, earnedXP: earnedXP, completedAt: completedAt)
    }
}
