import Foundation
public import SyncRules

/// What a device knows of the synced state: its local view (the server's state as last seen,
/// merged with the device's own changes), the changes not yet accepted by the server, and the
/// server's cursor. Stored whole now and then, and each change in between appended to its log
/// (`SyncLog`), so nothing is lost in a crash or offline, and a change costs one small write.
///
/// Every change of a slot goes through `set(_:)`, which applies it and keeps it in `journal`
/// for the log.
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
    /// The generation of the log entries that follow this state when it is stored whole.
    var logGeneration = 0
    /// The changes made since the journal was last taken (neither stored nor compared).
    var journal = Journal()

    /// The changes of slots not yet written to the log; any two are equal, so that a state's
    /// equality is its contents'.
    struct Journal: Equatable {
        var changes: [SyncLog.Change] = []
        static func == (lhs: Journal, rhs: Journal) -> Bool { true }
    }

    enum CodingKeys: String, CodingKey {
        case cursor, view, pendingProfile, pendingLessons, pendingAchievements, deviceID, records, pendingRecords
        case refusedProfile, refusedLessons, refusedAchievements, refusedRecords, logGeneration
    }

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
        logGeneration = try container.decodeIfPresent(Int.self, forKey: .logGeneration) ?? 0
    }

    /// `d-` and 16 random hex digits.
    static func newDeviceID() -> String {
        let hex = String(UInt64.random(in: .min ... .max), radix: 16)
        return "d-" + String(repeating: "0", count: 16 - hex.count) + hex
    }

    // MARK: Slots

    /// Sets a slot and keeps the change for the log.
    private mutating func set(_ change: SyncLog.Change) {
        journal.changes.append(change)
        replay(change)
    }

    /// The changes kept for the log since the last call, now forgotten.
    mutating func takeJournal() -> [SyncLog.Change] {
        defer { journal = Journal() }
        return journal.changes
    }

    /// Sets a slot as `change` says, without keeping the change (a log read back).
    mutating func replay(_ change: SyncLog.Change) {
        switch change {
        case .cursor(let value): cursor = value
        case .profile(.view, let profile): view.profile = profile
        case .profile(.pending, let profile): pendingProfile = profile
        case .profile(.refused, let profile): refusedProfile = profile
        case .lesson(let part, let lesson): withLessons(part) { Self.put(lesson, into: &$0) }
        case .lessonsRemoved(let part, let lessons): withLessons(part) { Self.remove(lessons, from: &$0) }
        case .achievement(let part, let achievement): withAchievements(part) { Self.put(achievement, into: &$0) }
        case .achievementsRemoved(let part, let achievements): withAchievements(part) { Self.remove(achievements, from: &$0) }
        case .record(.view, let collection, let key, let text): records[collection, default: [:]][key] = text
        case .record(.pending, let collection, let key, let text): pendingRecords[collection, default: [:]][key] = text
        case .record(.refused, let collection, let key, let text): refusedRecords[collection, default: [:]][key] = text
        case .viewCleared:
            view = SyncSnapshot()
            records = [:]
        case .refusedCleared(let collections):
            (refusedProfile, refusedLessons, refusedAchievements) = (nil, [], [])
            for name in collections { refusedRecords[name] = nil }
        }
    }

    private mutating func withLessons(_ part: SyncLog.Part, _ body: (inout [LessonProgress]) -> Void) {
        switch part {
        case .view: body(&view.lessons)
        case .pending: body(&pendingLessons)
        case .refused: body(&refusedLessons)
        }
    }

    private mutating func withAchievements(_ part: SyncLog.Part, _ body: (inout [AchievementProgress]) -> Void) {
        switch part {
        case .view: body(&view.achievements)
        case .pending: body(&pendingAchievements)
        case .refused: body(&refusedAchievements)
        }
    }

    private func lessons(_ part: SyncLog.Part) -> [LessonProgress] {
        switch part {
        case .view: view.lessons
        case .pending: pendingLessons
        case .refused: refusedLessons
        }
    }

    private func achievements(_ part: SyncLog.Part) -> [AchievementProgress] {
        switch part {
        case .view: view.achievements
        case .pending: pendingAchievements
        case .refused: refusedAchievements
        }
    }

    private func profile(_ part: SyncLog.Part) -> SyncProfile? {
        switch part {
        case .view: view.profile
        case .pending: pendingProfile
        case .refused: refusedProfile
        }
    }

    private func recordText(_ part: SyncLog.Part, _ collection: String, _ key: String) -> String? {
        switch part {
        case .view: records[collection]?[key]
        case .pending: pendingRecords[collection]?[key]
        case .refused: refusedRecords[collection]?[key]
        }
    }

    /// The index of the first item whose key is not below `key`, in a list sorted by key.
    private static func index<Item: SyncItem>(of key: Item.Key, in items: [Item]) -> Int where Item.Key: Comparable {
        var (low, high) = (0, items.count)
        while low < high {
            let middle = (low + high) / 2
            if items[middle].key < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func find<Item: SyncItem>(_ key: Item.Key, in items: [Item]) -> Item? where Item.Key: Comparable {
        let index = index(of: key, in: items)
        return index < items.count && items[index].key == key ? items[index] : nil
    }

    /// Puts `item` in place of the list's item of the same key, or inserts it; the list stays sorted.
    private static func put<Item: SyncItem>(_ item: Item, into items: inout [Item]) where Item.Key: Comparable {
        let index = index(of: item.key, in: items)
        if index < items.count && items[index].key == item.key { items[index] = item } else { items.insert(item, at: index) }
    }

    /// Removes the items of `removed`'s keys, in one pass.
    private static func remove<Item: SyncItem>(_ removed: [Item], from items: inout [Item]) {
        guard !removed.isEmpty else { return }
        let keys = Set(removed.map(\.key))
        items.removeAll { keys.contains($0.key) }
    }

    // MARK: Changes

    /// Merges `lesson` into the part's lesson of the same key, or adds it.
    private mutating func merge(_ lesson: LessonProgress, into part: SyncLog.Part) {
        let current = Self.find(lesson.key, in: lessons(part))
        let merged = current.map { $0.merged(with: lesson) } ?? lesson
        if merged != current { set(.lesson(part, merged)) }
    }

    private mutating func merge(_ achievement: AchievementProgress, into part: SyncLog.Part) {
        let current = Self.find(achievement.key, in: achievements(part))
        let merged = current.map { $0.merged(with: achievement) } ?? achievement
        if merged != current { set(.achievement(part, merged)) }
    }

    private mutating func merge(profile: SyncProfile, into part: SyncLog.Part) {
        let current = self.profile(part)
        let merged = current.map { $0.merged(with: profile) } ?? profile
        if merged != current { set(.profile(part, merged)) }
    }

    private mutating func merge(_ record: SyncRecord, into part: SyncLog.Part, _ converter: RecordConverter) {
        let name = converter.collection.name
        let current = recordText(part, name, record.key)
        let merged = converter.text(current.flatMap(converter.record(text:)).map { converter.collection.merged($0, record) } ?? record)
        if merged != current { set(.record(part, collection: name, key: record.key, text: merged)) }
    }

    /// Records a change of a declared collection's record: into the view and into the queue, by the
    /// collection's rules.
    mutating func record(_ record: SyncRecord, _ converter: RecordConverter) {
        merge(record, into: .view, converter)
        merge(record, into: .pending, converter)
    }

    /// The view's record of `key` in `converter`'s collection.
    func viewRecord(_ key: String, _ converter: RecordConverter) -> SyncRecord? {
        records[converter.collection.name]?[key].flatMap(converter.record(text:))
    }

    /// Records a local change: into the view and into the queue, both by the server's merge rules.
    mutating func record(profile: SyncProfile) {
        merge(profile: profile, into: .view)
        merge(profile: profile, into: .pending)
    }

    mutating func record(_ lesson: LessonProgress) {
        merge(lesson, into: .view)
        merge(lesson, into: .pending)
    }

    mutating func record(_ achievement: AchievementProgress) {
        merge(achievement, into: .view)
        merge(achievement, into: .pending)
    }

    /// The next request: at most `limit` pending lessons and achievements (the server's limit per
    /// request), the profile, and of each declared collection at most its declared records per
    /// request; and, when `wire` is given, no more than `maximumBytes` in all (at least one change),
    /// of which the declared records at most half of the schema's `bytesPerRequest` (the other half
    /// is left for what merging them with the server's records adds).
    func batch(limit: Int, collections: [RecordConverter] = [], wire: SyncWire? = nil, maximumBytes: Int = .max) -> SyncBatch {
        var budget = Budget(total: maximumBytes, records: wire.map { $0.schema.limits.bytesPerRequest / 2 } ?? .max)
        if let wire {
            // The envelope: the cursor and every member's name, with some room to spare.
            budget.total -= wire.write(cursor: cursor, items: [], profileAlways: false).count + 64
        }
        func size(_ record: SyncRecord, _ collection: Int) -> Int {
            guard let wire else { return 0 }
            return wire.codecs[collection].json(record).count + 1
        }
        var batch = SyncBatch(cursor: cursor, profile: nil, lessons: [], achievements: [])
        if let profile = pendingProfile, budget.take(size(profile.record, wire?.profile ?? 0), first: true) { batch.profile = profile }
        for lesson in pendingLessons.prefix(limit) {
            guard budget.take(size(lesson.record, SyncWire.progress), first: !batch.hasChanges) else { break }
            batch.lessons.append(lesson)
        }
        for achievement in pendingAchievements.prefix(limit) {
            guard budget.take(size(achievement.record, SyncWire.achievements), first: !batch.hasChanges) else { break }
            batch.achievements.append(achievement)
        }
        for converter in collections {
            let name = converter.collection.name
            guard let pending = pendingRecords[name], !pending.isEmpty else { continue }
            var taken: [String: String] = [:]
            for key in pending.keys.sorted().prefix(converter.collection.limits.itemsPerRequest) {
                let text = pending[key]!
                let bytes = wire == nil ? 0 : text.utf8.count + 1
                guard budget.take(bytes, first: !batch.hasChanges && taken.isEmpty, record: true) else { break }
                taken[key] = text
            }
            if !taken.isEmpty { batch.records[name] = taken }
        }
        return batch
    }

    /// The bytes a batch may still take.
    private struct Budget {
        var total: Int
        var records: Int

        /// Takes `bytes` when they fit, or when it is the batch's first change (which goes whatever
        /// its size: the server's own limits on one change are below a request's).
        mutating func take(_ bytes: Int, first: Bool, record: Bool = false) -> Bool {
            guard first || (bytes <= total && (!record || bytes <= records)) else { return false }
            total -= bytes
            if record { records -= bytes }
            return true
        }
    }

    /// Applies the server's answer to `batch`: what it accepted leaves the queue (unless changed
    /// again meanwhile), what changed on the server merges into the view, and the cursor moves.
    mutating func apply(_ answer: SyncAnswer, to batch: SyncBatch, collections: [RecordConverter] = []) {
        if let sent = batch.profile, pendingProfile == sent { set(.profile(.pending, nil)) }
        let lessons = batch.lessons.filter { Self.find($0.key, in: pendingLessons) == $0 }
        if !lessons.isEmpty { set(.lessonsRemoved(.pending, lessons)) }
        let achievements = batch.achievements.filter { Self.find($0.key, in: pendingAchievements) == $0 }
        if !achievements.isEmpty { set(.achievementsRemoved(.pending, achievements)) }
        for (name, sent) in batch.records {
            for (key, text) in sent where pendingRecords[name]?[key] == text {
                set(.record(.pending, collection: name, key: key, text: nil))
            }
        }
        if answer.resync {
            // The server no longer holds deletions this device missed: its state, and what this
            // device has not sent yet, are the whole view.
            set(.viewCleared)
            if let profile = pendingProfile { set(.profile(.view, profile)) }
            for lesson in pendingLessons { set(.lesson(.view, lesson)) }
            for achievement in pendingAchievements { set(.achievement(.view, achievement)) }
            for (name, pending) in pendingRecords {
                for (key, text) in pending { set(.record(.view, collection: name, key: key, text: text)) }
            }
        }
        for converter in collections {
            for record in answer.records[converter.collection.name] ?? [] { merge(record, into: .view, converter) }
        }
        if let profile = answer.profile { merge(profile: profile, into: .view) }
        for lesson in answer.lessons { merge(lesson, into: .view) }
        for achievement in answer.achievements { merge(achievement, into: .view) }
        if cursor != answer.cursor { set(.cursor(answer.cursor)) }
    }

    /// Sets aside what the server refused of `batch`: its changes leave the queue (unless changed
    /// again meanwhile) for the refused ones, merged there by the same rules.
    mutating func setAside(_ batch: SyncBatch, collections: [RecordConverter] = []) {
        if let sent = batch.profile, pendingProfile == sent {
            set(.profile(.pending, nil))
            merge(profile: sent, into: .refused)
        }
        let lessons = batch.lessons.filter { Self.find($0.key, in: pendingLessons) == $0 }
        if !lessons.isEmpty { set(.lessonsRemoved(.pending, lessons)) }
        for lesson in lessons { merge(lesson, into: .refused) }
        let achievements = batch.achievements.filter { Self.find($0.key, in: pendingAchievements) == $0 }
        if !achievements.isEmpty { set(.achievementsRemoved(.pending, achievements)) }
        for achievement in achievements { merge(achievement, into: .refused) }
        for converter in collections {
            let name = converter.collection.name
            for (key, text) in batch.records[name] ?? [:] where pendingRecords[name]?[key] == text {
                set(.record(.pending, collection: name, key: key, text: nil))
                if let record = converter.record(text: text) { merge(record, into: .refused, converter) }
            }
        }
    }

    /// Queues the refused changes again, merged into the queue.
    mutating func requeueRefused(collections: [RecordConverter] = []) {
        guard hasRefused else { return }
        if let profile = refusedProfile { merge(profile: profile, into: .pending) }
        for lesson in refusedLessons { merge(lesson, into: .pending) }
        for achievement in refusedAchievements { merge(achievement, into: .pending) }
        for converter in collections {
            for text in (refusedRecords[converter.collection.name] ?? [:]).values {
                if let record = converter.record(text: text) { merge(record, into: .pending, converter) }
            }
        }
        set(.refusedCleared(collections: collections.map(\.collection.name)))
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
