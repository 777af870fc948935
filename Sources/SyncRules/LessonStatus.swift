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
