public import SyncRules

/// What a device knows of the synced state: its local view (the server's state as last seen,
/// merged with the device's own changes), the changes not yet accepted by the server, and the
/// server's cursor. Stored whole after every change, so nothing is lost in a crash or offline.
struct SyncState: Codable, Equatable {
    var cursor: String?
    var view = SyncSnapshot()
    var pendingProfile: SyncProfile?
    var pendingLessons: [LessonProgress] = []
    var pendingAchievements: [AchievementProgress] = []

    var hasPending: Bool { pendingProfile != nil || !pendingLessons.isEmpty || !pendingAchievements.isEmpty }

    /// Records a local change: into the view and into the queue, both by the server's merge rules.
    mutating func record(profile: SyncProfile) {
        view.profile = view.profile.map { $0.merged(with: profile) } ?? profile
        pendingProfile = pendingProfile.map { $0.merged(with: profile) } ?? profile
    }

    mutating func record(_ lesson: LessonProgress) {
        Self.merge(lesson, into: &view.lessons)
        Self.merge(lesson, into: &pendingLessons)
    }

    mutating func record(_ achievement: AchievementProgress) {
        Self.merge(achievement, into: &view.achievements)
        Self.merge(achievement, into: &pendingAchievements)
    }

    /// At most `limit` pending lessons and achievements (the server's limit per request), and the profile.
    func batch(limit: Int) -> SyncBatch {
        SyncBatch(
            cursor: cursor, profile: pendingProfile, lessons: Array(pendingLessons.prefix(limit)),
            achievements: Array(pendingAchievements.prefix(limit)))
    }

    /// Applies the server's answer to `batch`: what it accepted leaves the queue (unless changed
    /// again meanwhile), what changed on the server merges into the view, and the cursor moves.
    mutating func apply(_ answer: SyncAnswer, to batch: SyncBatch) {
        if let sent = batch.profile, pendingProfile == sent { pendingProfile = nil }
        pendingLessons.removeAll { pending in batch.lessons.contains(pending) }
        pendingAchievements.removeAll { pending in batch.achievements.contains(pending) }
        if let profile = answer.profile { view.profile = view.profile.map { $0.merged(with: profile) } ?? profile }
        for lesson in answer.lessons { Self.merge(lesson, into: &view.lessons) }
        for achievement in answer.achievements { Self.merge(achievement, into: &view.achievements) }
        cursor = answer.cursor
    }

    /// Merges `item` into the list's item of the same key, or appends it; the list stays sorted by key.
    private static func merge<Item: SyncItem>(_ item: Item, into items: inout [Item]) where Item.Key: Comparable {
        if let index = items.firstIndex(where: { $0.key == item.key }) {
            items[index] = items[index].merged(with: item)
        } else {
            let index = items.firstIndex { $0.key > item.key } ?? items.endIndex
            items.insert(item, at: index)
        }
    }
}

/// The local view of the synced state, for the app's UI: lessons sorted by (belief system,
/// lesson), achievements by id.
public struct SyncSnapshot: Sendable, Equatable, Codable {
    /// The profile; nil until one was recorded or synced.
    public var profile: SyncProfile?
    /// The progress of each lesson, sorted by (belief system, lesson).
    public var lessons: [LessonProgress] = []
    /// The state of each achievement, sorted by id.
    public var achievements: [AchievementProgress] = []

    /// A view with the given contents (empty by default), for previews and tests.
    /// - Parameters:
    ///   - profile: the profile, if any.
    ///   - lessons: the lessons' progress, sorted by (belief system, lesson).
    ///   - achievements: the achievements' state, sorted by id.
    public init(profile: SyncProfile? = nil, lessons: [LessonProgress] = [], achievements: [AchievementProgress] = []) {
        self.profile = profile
        self.lessons = lessons
        self.achievements = achievements
    }
}

/// One `POST /sync` request.
struct SyncBatch: Equatable {
    var cursor: String?
    var profile: SyncProfile?
    var lessons: [LessonProgress]
    var achievements: [AchievementProgress]
}

/// The server's answer to a sync.
struct SyncAnswer: Equatable {
    var cursor: String
    var profile: SyncProfile?
    var lessons: [LessonProgress]
    var achievements: [AchievementProgress]
}
