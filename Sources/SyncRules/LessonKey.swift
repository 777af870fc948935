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
