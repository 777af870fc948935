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
    /// This device's id in "latest wins" stamps and counters: made once, kept with the state.
    var deviceID = SyncState.newDeviceID()
    /// The records of declared collections in the view: by collection, then key, as the codec writes them.
    var records: [String: [String: String]] = [:]
    /// The records not yet accepted by the server, likewise.
    var pendingRecords: [String: [String: String]] = [:]
    /// Changes the server refused for good (400: past a declared limit, not valid for it): set
    /// aside, still in the view, not sent again until `requeueRefused` (so that the rest syncs).
    var refusedProfile: SyncProfile?
    var refusedLessons: [LessonProgress] = []
    var refusedAchievements: [AchievementProgress] = []
    var refusedRecords: [String: [String: String]] = [:]

    var hasRefused: Bool {
        refusedProfile != nil || !refusedLessons.isEmpty || !refusedAchievements.isEmpty || refusedRecords.values.contains { !$0.isEmpty }
    }

    var hasPending: Bool {
        pendingProfile != nil || !pendingLessons.isEmpty || !pendingAchievements.isEmpty || pendingRecords.values.contains { !$0.isEmpty }
    }

    /// Whether a batch for `collections` would send anything: records of a collection this client
    /// was not given stay queued (a client given it later sends them) without being sent again and
    /// again.
    func hasPending(sending collections: [RecordConverter]) -> Bool {
        pendingProfile != nil || !pendingLessons.isEmpty || !pendingAchievements.isEmpty
            || collections.contains { pendingRecords[$0.collection.name]?.isEmpty == false }
    }

    init() {}

    /// A stored state; one from before declared collections has none of their members.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        cursor = try container.decodeIfPresent(String.self, forKey: .cursor)
        view = try container.decode(SyncSnapshot.self, forKey: .view)
        pendingProfile = try container.decodeIfPresent(SyncProfile.self, forKey: .pendingProfile)
        pendingLessons = try container.decode([LessonProgress].self, forKey: .pendingLessons)
        pendingAchievements = try container.decode([AchievementProgress].self, forKey: .pendingAchievements)
        deviceID = try container.decodeIfPresent(String.self, forKey: .deviceID) ?? Self.newDeviceID()
        records = try container.decodeIfPresent([String: [String: String]].self, forKey: .records) ?? [:]
        pendingRecords = try container.decodeIfPresent([String: [String: String]].self, forKey: .pendingRecords) ?? [:]
        refusedProfile = try container.decodeIfPresent(SyncProfile.self, forKey: .refusedProfile)
        refusedLessons = try container.decodeIfPresent([LessonProgress].self, forKey: .refusedLessons) ?? []
        refusedAchievements = try container.decodeIfPresent([AchievementProgress].self, forKey: .refusedAchievements) ?? []
        refusedRecords = try container.decodeIfPresent([String: [String: String]].self, forKey: .refusedRecords) ?? [:]
    }

    /// `d-` and 16 random hex digits.
    static func newDeviceID() -> String {
        let hex = String(UInt64.random(in: .min ... .max), radix: 16)
        return "d-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Records a change of a declared collection's record: into the view and into the queue, by the
    /// collection's rules.
    mutating func record(_ record: SyncRecord, _ converter: RecordConverter) {
        let name = converter.collection.name
        Self.merge(record, into: &records[name, default: [:]], converter)
        Self.merge(record, into: &pendingRecords[name, default: [:]], converter)
    }

    /// The view's record of `key` in `converter`'s collection.
    func viewRecord(_ key: String, _ converter: RecordConverter) -> SyncRecord? {
        records[converter.collection.name]?[key].flatMap(converter.record(text:))
    }

    private static func merge(_ record: SyncRecord, into records: inout [String: String], _ converter: RecordConverter) {
        let current = records[record.key].flatMap(converter.record(text:))
        records[record.key] = converter.text(current.map { converter.collection.merged($0, record) } ?? record)
    }

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

    /// At most `limit` pending lessons and achievements (the server's limit per request), the
    /// profile, and of each declared collection at most its declared records per request.
    func batch(limit: Int, collections: [RecordConverter] = []) -> SyncBatch {
        var records: [String: [String: String]] = [:]
        for converter in collections {
            let name = converter.collection.name
            guard let pending = pendingRecords[name], !pending.isEmpty else { continue }
            let keys = pending.keys.sorted().prefix(converter.collection.limits.itemsPerRequest)
            records[name] = Dictionary(uniqueKeysWithValues: keys.map { ($0, pending[$0]!) })
        }
        return SyncBatch(
            cursor: cursor, profile: pendingProfile, lessons: Array(pendingLessons.prefix(limit)),
            achievements: Array(pendingAchievements.prefix(limit)), records: records)
    }

    /// Applies the server's answer to `batch`: what it accepted leaves the queue (unless changed
    /// again meanwhile), what changed on the server merges into the view, and the cursor moves.
    mutating func apply(_ answer: SyncAnswer, to batch: SyncBatch, collections: [RecordConverter] = []) {
        if let sent = batch.profile, pendingProfile == sent { pendingProfile = nil }
        pendingLessons.removeAll { pending in batch.lessons.contains(pending) }
        pendingAchievements.removeAll { pending in batch.achievements.contains(pending) }
        for (name, sent) in batch.records {
            for (key, text) in sent where pendingRecords[name]?[key] == text { pendingRecords[name]?[key] = nil }
        }
        if answer.resync {
            // The server no longer holds deletions this device missed: its state, and what this
            // device has not sent yet, are the whole view.
            view = SyncSnapshot()
            records = [:]
            if let profile = pendingProfile { view.profile = profile }
            for lesson in pendingLessons { Self.merge(lesson, into: &view.lessons) }
            for achievement in pendingAchievements { Self.merge(achievement, into: &view.achievements) }
            records = pendingRecords
        }
        for converter in collections {
            let name = converter.collection.name
            for record in answer.records[name] ?? [] { Self.merge(record, into: &records[name, default: [:]], converter) }
        }
        if let profile = answer.profile { view.profile = view.profile.map { $0.merged(with: profile) } ?? profile }
        for lesson in answer.lessons { Self.merge(lesson, into: &view.lessons) }
        for achievement in answer.achievements { Self.merge(achievement, into: &view.achievements) }
        cursor = answer.cursor
    }

    /// Sets aside what the server refused of `batch`: its changes leave the queue (unless changed
    /// again meanwhile) for the refused ones, merged there by the same rules.
    mutating func setAside(_ batch: SyncBatch, collections: [RecordConverter] = []) {
        if let sent = batch.profile, pendingProfile == sent {
            pendingProfile = nil
            refusedProfile = refusedProfile.map { $0.merged(with: sent) } ?? sent
        }
        for lesson in batch.lessons where pendingLessons.contains(lesson) {
            pendingLessons.removeAll { $0 == lesson }
            Self.merge(lesson, into: &refusedLessons)
        }
        for achievement in batch.achievements where pendingAchievements.contains(achievement) {
            pendingAchievements.removeAll { $0 == achievement }
            Self.merge(achievement, into: &refusedAchievements)
        }
        for converter in collections {
            let name = converter.collection.name
            for (key, text) in batch.records[name] ?? [:] where pendingRecords[name]?[key] == text {
                pendingRecords[name]?[key] = nil
                if let record = converter.record(text: text) { Self.merge(record, into: &refusedRecords[name, default: [:]], converter) }
            }
        }
    }

    /// Queues the refused changes again, merged into the queue.
    mutating func requeueRefused(collections: [RecordConverter] = []) {
        if let profile = refusedProfile { pendingProfile = pendingProfile.map { $0.merged(with: profile) } ?? profile }
        for lesson in refusedLessons { Self.merge(lesson, into: &pendingLessons) }
        for achievement in refusedAchievements { Self.merge(achievement, into: &pendingAchievements) }
        for converter in collections {
            let name = converter.collection.name
            for text in (refusedRecords[name] ?? [:]).values {
                if let record = converter.record(text: text) { Self.merge(record, into: &pendingRecords[name, default: [:]], converter) }
            }
            refusedRecords[name] = nil
        }
        (refusedProfile, refusedLessons, refusedAchievements) = (nil, [], [])
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
    /// Records of declared collections: by collection, then key, as the codec writes them.
    var records: [String: [String: String]] = [:]

    /// Whether it sends any change (not only the cursor).
    var hasChanges: Bool { profile != nil || !lessons.isEmpty || !achievements.isEmpty || records.values.contains { !$0.isEmpty } }
}

/// The server's answer to a sync.
struct SyncAnswer: Equatable {
    var cursor: String
    var profile: SyncProfile?
    var lessons: [LessonProgress]
    var achievements: [AchievementProgress]
    /// Changed records of declared collections, by collection.
    var records: [String: [SyncRecord]] = [:]
    /// Another page follows.
    var more = false
    /// The view must be replaced by this answer and the pages after it.
    var resync = false
}
