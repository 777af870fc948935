package import AccountData
package import MariaDB
import StrictJSON
import SyncRules

/// The SQL of sync.
///
/// A sync first reads the user's state without locks and merges in memory. When nothing would
/// change (a device re-sending what the server has), it answers from that read: no transaction,
/// no write. Otherwise it writes in one transaction that locks the user's row first, so two
/// devices of one user are merged one after the other and no update is lost; if another sync
/// got in between (the user's version moved), the state is read again under the lock. Only rows
/// whose merged state differs are written. The merge rules are those of the `SyncRules` module.
package enum SyncStore {
    /// Sizes of `IN (...)` lists, largest first: a list is padded to one of them, so that only a few
    /// statement shapes are ever prepared.
    static let inListSizes = [64, 32, 16, 8, 4, 2, 1]

    /// The user's stored state, as one sync reads it: every item with the version that last changed
    /// it, so that what changed since a cursor is found in it.
    package struct Stored: Sendable {
        var version: UInt64
        var profileVersion: UInt64
        var profile: SyncProfile
        var lessons: [LessonKey: Versioned<LessonProgress>]
        var achievements: [String: Versioned<AchievementProgress>]
        /// The records of each declared collection, by key, in the schema's order.
        var records: [[String: Versioned<SyncRecord>]] = []
        /// The highest version of a tombstone purged (`users.sync_purged_version`).
        var purgedVersion: UInt64 = 0
        /// The memory the records take, by `SyncCache.cost(of:)`, kept up to date as they change.
        var recordBytes = 0
        /// The bytes the records take as stored (their JSON), kept up to date as they change: what
        /// the declared byte limits count.
        var storedBytes = 0
        /// Whether the user is a guest (stricter byte limits).
        var guest = false

        /// What changed after `cursor`, at most `limit` items and about `bytes` bytes
        /// (`SyncCursor.pageBytes`), ordered by version, then list, then key.
        func changed(after cursor: SyncCursor, limit: Int, bytes: Int = SyncCursor.pageBytes) -> SyncPage {
            var entries: [SyncPage.Entry] = []
            func include(_ version: UInt64, _ list: Int, _ key: @autoclosure () -> String, _ index: Int) {
                guard version >= cursor.version else { return }
                let position = SyncCursor.Position(list: list, key: key())
                if version == cursor.version {
                    guard let after = cursor.position, position > after else { return }
                }
                entries.append(SyncPage.Entry(version: version, position: position, index: index))
            }
            let lessons = Array(self.lessons.values)
            for (index, lesson) in lessons.enumerated() {
                include(lesson.version, 0, lesson.item.beliefSystemID + "\u{0}" + lesson.item.lessonID, index)
            }
            let achievements = Array(self.achievements.values)
            for (index, achievement) in achievements.enumerated() { include(achievement.version, 1, achievement.item.achievementID, index) }
            let records = self.records.map { Array($0.values) }
            for (collection, list) in records.enumerated() {
                for (index, record) in list.enumerated() { include(record.version, 2 + collection, record.item.key, index) }
            }
            entries.sort { ($0.version, $0.position) < ($1.version, $1.position) }
            var page = SyncPage(more: entries.count > limit)
            var pageBytes = 0
            for (number, entry) in entries.prefix(limit).enumerated() {
                let size = entry.position.list < 2 ? SyncCursor.itemBytes : records[entry.position.list - 2][entry.index].bytes
                if number > 0 && pageBytes + size > bytes {
                    page.more = true
                    break
                }
                pageBytes += size
                switch entry.position.list {
                case 0: page.progress.append(lessons[entry.index].item)
                case 1: page.achievements.append(achievements[entry.index].item)
                default:
                    let collection = entry.position.list - 2
                    page.records.append(CollectionRecord(collection: collection, record: records[collection][entry.index].item))
                }
                page.last = (entry.version, entry.position)
            }
            return page
        }
    }

    /// One page of what changed: items in order, whether more follow, and the last item's place.
    struct SyncPage {
        struct Entry {
            var version: UInt64
            var position: SyncCursor.Position
            var index: Int
        }

        var progress: [LessonProgress] = []
        var achievements: [AchievementProgress] = []
        var records: [CollectionRecord] = []
        var more: Bool
        var last: (version: UInt64, position: SyncCursor.Position)?
    }

    /// An item and the user's version that last changed it.
    struct Versioned<Item: Sendable>: Sendable {
        var item: Item
        var version: UInt64
        /// The bytes a declared record takes as stored (its JSON); 0 for lessons and achievements.
        var bytes = 0
    }

    /// What the incoming changes do to a stored state.
    package struct Merge: Sendable {
        var lessons: [LessonProgress]
        var achievements: [AchievementProgress]
        var profile: SyncProfile
        var profileChanged: Bool
        /// Changed records of declared collections, each with its row's JSON.
        var records: [MergedRecord] = []
        var count: Int { lessons.count + achievements.count + records.count + (profileChanged ? 1 : 0) }
    }

    /// A record as a sync changed it, with what its row stores.
    struct MergedRecord: Sendable {
        var collection: Int
        var name: String
        var record: SyncRecord
        var json: [UInt8]
        /// Whether the user had no such record before.
        var isNew = false
    }

    /// Merges `changes` into `userID`'s state and returns what changed since the cursor. Runs its
    /// own transaction when it writes; call it outside one.
    /// - Returns: nil when the user does not exist (deleted meanwhile) or `session` is not active.
    /// - Parameters:
    ///   - session: the caller's session of `userID`, checked by the statements the sync runs anyway
    ///     (for a batch, one statement for all its sessions), so that checking it costs no round
    ///     trip of its own; nil when the caller checked it already.
    ///   - group: batches the write with other users' concurrent syncs; nil writes alone.
    ///   - cache: the process's recently synced states, used and kept up to date; nil reads the user.
    ///   - collections: the app's declared collections.
    /// - Throws: `SyncLimitExceeded` when the changes would take a collection past its items per user.
    package static func sync(
        userID: UInt64, session: UInt64? = nil, changes: SyncChanges, on connection: Connection, group: SyncCommitter? = nil,
        cache: SyncCache? = nil, collections: DeclaredCollections = .none
    ) throws -> SyncDelta? {
        let cached = cache?.state(of: userID)
        guard var stored = try cached ?? readConsistent(userID: userID, session: session, collections: collections, on: connection)
        else { return nil }
        var merge: Merge
        do {
            merge = try merged(changes, into: stored, collections)
        } catch is SyncLimitExceeded where cached != nil {
            // A cached state may be behind (another process wrote, a guest was linked since): a
            // refusal is decided on the stored state.
            guard let fresh = try readConsistent(userID: userID, session: session, collections: collections, on: connection) else {
                return nil
            }
            stored = fresh
            merge = try merged(changes, into: stored, collections)
        }
        // A cached state that this sync does not change is checked against the stored version before
        // it answers (another device may have moved on); a changing sync's write checks it under lock.
        if cached != nil, merge.count == 0, try currentVersion(of: userID, session: session, on: connection) != stored.version {
            guard let fresh = try readConsistent(userID: userID, session: session, collections: collections, on: connection) else {
                cache?.forget(userID)
                return nil
            }
            stored = fresh
            merge = try merged(changes, into: stored, collections)
        }
        var version = stored.version
        if merge.count > 0 {
            switch group?.commit(userID: userID, session: session, from: stored, merge) {
            case .committed:
                break
            case .failed(let error):
                // The database is gone or stopped answering: writing alone would wait for it again.
                throw error
            case .writeAlone, nil:
                guard
                    let written = try writeAlone(
                        userID: userID, session: session, changes, from: stored, merge, collections: collections, on: connection)
                else {
                    cache?.forget(userID)
                    return nil
                }
                (stored, merge) = written
            }
            version = merge.count > 0 ? stored.version + 1 : stored.version
        }
        let state = merge.count > 0 ? applied(merge, to: stored) : stored
        // The cache learns the state, unless it is the cached state itself, unchanged.
        if cached?.version != state.version { cache?.keep(state, of: userID) }
        let profileVersion = merge.profileChanged ? version : stored.profileVersion
        // A cursor from the future (a restored backup, another server) gets everything with a
        // resync, and so does one older than a purged tombstone: that device missed a deletion,
        // and must start over.
        let ahead = changes.cursor.map { $0.version > stored.version } ?? false
        var cursor = ahead ? SyncCursor(version: 0) : changes.cursor ?? SyncCursor(version: 0)
        // A pass that starts from nothing carries the version it started at as its base: a tombstone
        // purged after it, of a record an earlier page sent, calls for a resync as well.
        let resync = ahead || ((cursor.version > 0 || cursor.position != nil) && cursor.base < state.purgedVersion)
        if resync || (cursor.version == 0 && cursor.position == nil) { cursor = SyncCursor(version: 0, base: state.version) }
        var delta = SyncDelta(
            cursor: SyncCursor(version: version), profile: cursor.version == 0 || profileVersion > cursor.version ? merge.profile : nil,
            progress: merge.lessons, achievements: merge.achievements,
            records: merge.records.map { CollectionRecord(collection: $0.collection, record: $0.record) },
            changed: merge.count)
        delta.resync = resync
        // A device that was up to date gets exactly what this sync changed; one that was behind also
        // gets what other devices changed meanwhile, a page at a time.
        if cursor.version != stored.version || cursor.position != nil {
            let page = state.changed(after: cursor, limit: changes.limit ?? SyncCursor.defaultPage)
            (delta.progress, delta.achievements, delta.records, delta.more) = (page.progress, page.achievements, page.records, page.more)
            if page.more, let last = page.last {
                delta.cursor = SyncCursor(version: last.version, base: cursor.base, position: last.position)
            }
        }
        return delta
    }

    /// Writes `merge` in a transaction of its own. Moving the version from the one read locks the
    /// user's row; if another sync moved it first, the state is read again under the lock and merged
    /// again. Returns the state the write started from and what it wrote; nil when the user is gone
    /// or `session` is not active.
    static func writeAlone(
        userID: UInt64, session: UInt64?, _ changes: SyncChanges, from stored: Stored, _ merge: Merge, collections: DeclaredCollections,
        on connection: Connection
    ) throws -> (Stored, Merge)? {
        // Before the transaction: its first plain read fixes the snapshot its reads see, which must
        // come after the user's row is locked (`read(lock: true)` reads the rows of another sync
        // that moved the version first).
        if let session, try !Sessions.isActive(sessionID: session, userID: userID, on: connection) { return nil }
        return try connection.transaction { () -> (Stored, Merge)? in
            var (stored, merge) = (stored, merge)
            if try !advance(userID: userID, from: stored, merge, on: connection) {
                guard let fresh = try read(userID: userID, session: nil, lock: true, collections: collections, on: connection) else {
                    return nil
                }
                stored = fresh
                merge = try merged(changes, into: stored, collections)
                // On one server the lock holds the version still. A Galera node applies another
                // node's write without regard to local locks: a lost race, not an ended session,
                // so the whole sync runs again (the caller retries deadlocks).
                if merge.count > 0, try !advance(userID: userID, from: stored, merge, on: connection) {
                    throw MariaDBError(.deadlock, errno: 1213, sqlState: "40001", message: "the sync version moved under the row lock")
                }
            }
            if merge.count > 0 {
                let version = stored.version + 1
                try write(merge.lessons.map { (userID, version, $0) }, on: connection)
                try write(merge.achievements.map { (userID, version, $0) }, on: connection)
                try write(merge.records.map { (userID, version, $0) }, on: connection)
            }
            return (stored, merge)
        }
    }

    /// The state after `merge` was written over `stored`.
    static func applied(_ merge: Merge, to stored: Stored) -> Stored {
        var state = stored
        state.version += 1
        if merge.profileChanged {
            state.profile = merge.profile
            state.profileVersion = state.version
        }
        for lesson in merge.lessons { state.lessons[lesson.key] = Versioned(item: lesson, version: state.version) }
        for achievement in merge.achievements { state.achievements[achievement.key] = Versioned(item: achievement, version: state.version) }
        for merged in merge.records {
            while state.records.count <= merged.collection { state.records.append([:]) }
            let old = state.records[merged.collection].updateValue(
                Versioned(item: merged.record, version: state.version, bytes: merged.json.count), forKey: merged.record.key)
            state.recordBytes += SyncCache.cost(of: merged.record) - (old.map { SyncCache.cost(of: $0.item) } ?? 0)
            state.storedBytes += merged.json.count - (old?.bytes ?? 0)
        }
        return state
    }

    /// `read` without locks, its statements in one transaction: one snapshot of the user's row and
    /// items, so that every item of the version read is there (a page's cursor can stop inside a
    /// version, and a torn read would skip the rest of it).
    static func readConsistent(userID: UInt64, session: UInt64?, collections: DeclaredCollections, on connection: Connection) throws
        -> Stored?
    {
        try connection.transaction { try read(userID: userID, session: session, lock: false, collections: collections, on: connection) }
    }

    /// The user's version as stored now; nil when the user is gone or `session` is not active.
    static func currentVersion(of userID: UInt64, session: UInt64?, on connection: Connection) throws -> UInt64? {
        // With a session, the user is only found while that session of theirs is active.
        let rows =
            if let session {
                try connection.query(
                    "SELECT u.sync_version FROM users u JOIN sessions s ON s.user_id = u.id WHERE u.id = ? AND s.id = ? AND \(Sessions.activeCondition)",
                    userID, session)
            } else {
                try connection.query("SELECT u.sync_version FROM users u WHERE u.id = ?", userID)
            }
        return try rows.first?.decode(column: "sync_version")
    }

    /// The stored rows that `changes` (as a device sent them, an item possibly listed twice) would
    /// change, merged.
    /// - Throws: `SyncLimitExceeded` when a collection would hold more records than it allows.
    package static func merged(_ changes: SyncChanges, into stored: Stored, _ collections: DeclaredCollections = .none) throws -> Merge {
        let mergedProfile = changes.profile.map { stored.profile.merged(with: $0) } ?? stored.profile
        var merge = Merge(
            lessons: changedItems(changes.progress, of: stored.lessons),
            achievements: changedItems(changes.achievements, of: stored.achievements),
            profile: mergedProfile, profileChanged: mergedProfile != stored.profile)
        if !changes.records.isEmpty { merge.records = try changedRecords(changes.records, of: stored, collections) }
        return merge
    }

    /// The stored records that `incoming` changes, merged as `changedItems` merges items (each
    /// incoming record with its stored one alone, then those that change it with each other), each
    /// with its row's JSON.
    static func changedRecords(
        _ incoming: [CollectionRecord], of stored: Stored, _ collections: DeclaredCollections
    ) throws -> [MergedRecord] {
        var changed: [MergedRecord] = []
        let declared = collections.schema.collections
        for change in incoming {
            let current = change.collection < stored.records.count ? stored.records[change.collection][change.record.key]?.item : nil
            let merged = current.map { declared[change.collection].merged($0, change.record) } ?? change.record
            guard merged != current else { continue }
            // A record listed twice: few records change, so it is looked for among those.
            if let at = changed.firstIndex(where: { $0.collection == change.collection && $0.record.key == merged.key }) {
                changed[at].record = declared[change.collection].merged(changed[at].record, merged)
                continue
            }
            changed.append(
                MergedRecord(
                    collection: change.collection, name: declared[change.collection].name, record: merged, json: [], isNew: current == nil))
        }
        var added = [Int](repeating: 0, count: collections.codecs.count)
        for record in changed where record.isNew { added[record.collection] += 1 }
        for (index, count) in added.enumerated() where count > 0 {
            let collection = collections.codecs[index].collection
            let limit = collection.limits.itemsPerUser
            if (index < stored.records.count ? stored.records[index].count : 0) + count > limit {
                throw SyncLimitExceeded(
                    path: "collections.\(collection.name)", problem: "would hold more than \(limit) records for this user")
            }
        }
        for index in changed.indices { changed[index].json = collections.codecs[changed[index].collection].json(changed[index].record) }
        try checkBytes(of: changed, against: stored, collections)
        return changed
    }

    /// Refuses `changed` when a merged record would take its counters' devices or its bytes past its
    /// collection's limits, or the records past the bytes a request may write or the user may
    /// store (`SyncSchema.Limits`, stricter for a guest). A record stored before a limit was
    /// lowered may stay over it, as long as a change does not take it further.
    /// - Throws: `SyncLimitExceeded` naming the limit; nothing was written.
    static func checkBytes(of changed: [MergedRecord], against stored: Stored, _ collections: DeclaredCollections) throws {
        let limits = collections.schema.limits
        var requestBytes = 0
        var growth = 0
        for merged in changed {
            let collection = collections.codecs[merged.collection].collection
            let current = merged.collection < stored.records.count ? stored.records[merged.collection][merged.record.key] : nil
            if let (field, problem) = collection.counterProblem(in: merged.record, comparedTo: current?.item) {
                throw SyncLimitExceeded(path: "collections.\(collection.name).\(field)", problem: problem)
            }
            let bytes = merged.json.count
            if bytes > collection.limits.bytesPerRecord && bytes > (current?.bytes ?? 0) {
                throw SyncLimitExceeded(
                    path: "collections.\(collection.name)",
                    problem: "would make a record of \(bytes) bytes, more than the \(collection.limits.bytesPerRecord) a record may take")
            }
            requestBytes += bytes
            growth += bytes - (current?.bytes ?? 0)
        }
        if requestBytes > limits.bytesPerRequest {
            throw SyncLimitExceeded(
                path: "collections",
                problem: "would write \(requestBytes) bytes of records, more than the \(limits.bytesPerRequest) a request may")
        }
        let allowed = stored.guest ? limits.guestBytesPerUser : limits.bytesPerUser
        if growth > 0 && stored.storedBytes + growth > allowed {
            throw SyncLimitExceeded(
                path: "collections",
                problem: "would store \(stored.storedBytes + growth) bytes of records for this user, more than the \(allowed) "
                    + (stored.guest ? "a guest may (signing in with Apple allows more)" : "a user may"))
        }
    }

    /// The stored items that `incoming` changes, each merged with all that the device sent for it.
    ///
    /// Each incoming item is merged with its stored one alone, and only those that change it are
    /// merged with each other: an item that leaves its stored one as it is changes nothing, whatever
    /// it is merged with, since merges are idempotent, commutative and associative. So the usual
    /// sync, which changes few of the items it sends, merges few.
    static func changedItems<Item: SyncItem>(_ incoming: [Item], of stored: [Item.Key: Versioned<Item>]) -> [Item] {
        let changed = incoming.compactMap { item -> Item? in
            let current = stored[item.key]?.item
            let merged = current?.merged(with: item) ?? item
            return merged == current ? nil : merged
        }
        return collapse(changed)
    }

    /// The user's whole synced state (a user has a bounded set of lessons and achievements); nil when
    /// the user is gone or `session` is not active.
    package static func read(
        userID: UInt64, session: UInt64?, lock: Bool, collections: DeclaredCollections = .none, on connection: Connection
    ) throws -> Stored? {
        // With a session, the user is only found while that session of theirs is active; locked,
        // both rows are held until the transaction ends.
        let columns = """
            u.sync_version, u.total_xp, u.current_level, u.streak_days, DATE_FORMAT(u.last_active_date, '%Y-%m-%d') AS last_active,
                u.profile_version, u.sync_purged_version, u.guest_since IS NOT NULL AS guest
            """
        let lockClause = lock ? "FOR UPDATE" : ""
        let users =
            if let session {
                try connection.query(
                    """
                    SELECT \(raw: columns) FROM users u JOIN sessions s ON s.user_id = u.id
                    WHERE u.id = ? AND s.id = ? AND \(Sessions.activeCondition) \(raw: lockClause)
                    """, userID, session)
            } else {
                try connection.query("SELECT \(raw: columns) FROM users u WHERE u.id = ? \(raw: lockClause)", userID)
            }
        guard let user = users.first else { return nil }
        var lessons: [LessonKey: Versioned<LessonProgress>] = [:]
        for row in try connection.query("SELECT \(raw: progressColumns), version FROM progress WHERE user_id = ?", userID) {
            let lesson = try lesson(row)
            lessons[lesson.key] = Versioned(item: lesson, version: try row.decode(column: "version"))
        }
        var achievements: [String: Versioned<AchievementProgress>] = [:]
        for row in try connection.query("SELECT \(raw: achievementColumns), version FROM user_achievements WHERE user_id = ?", userID) {
            let achievement = try achievement(row)
            achievements[achievement.key] = Versioned(item: achievement, version: try row.decode(column: "version"))
        }
        var records = [[String: Versioned<SyncRecord>]](repeating: [:], count: collections.codecs.count)
        var recordBytes = 0
        var storedBytes = 0
        if !collections.isEmpty {
            for row in try connection.query("SELECT collection, body, version FROM sync_records WHERE user_id = ?", userID) {
                // Rows of a collection no longer declared stay stored, unsynced.
                guard let index = collections.schema.index(of: try row.decode(column: "collection")) else { continue }
                let body: [UInt8] = try row.decode(column: "body")
                var reader = JSONReader(body, limits: .tokens)
                guard case .success(let record) = try collections.codecs[index].read(&reader, path: "", checked: false) else { continue }
                records[index][record.key] = Versioned(item: record, version: try row.decode(column: "version"), bytes: body.count)
                recordBytes += SyncCache.cost(of: record)
                storedBytes += body.count
            }
        }
        return Stored(
            version: try user.decode(column: "sync_version"), profileVersion: try user.decode(column: "profile_version"),
            profile: SyncProfile(
                totalXP: try user.decode(column: "total_xp"), currentLevel: try user.decode(column: "current_level"),
                streakDays: try user.decode(column: "streak_days"), lastActiveDate: try user.decode(column: "last_active")),
            lessons: lessons, achievements: achievements, records: records, purgedVersion: try user.decode(column: "sync_purged_version"),
            recordBytes: recordBytes, storedBytes: storedBytes, guest: try user.decode(column: "guest"))
    }

    /// Moves the user's version on by one (and stores the merged profile), if it is still the
    /// version of `stored`; false otherwise (another sync got in between, or the user is gone).
    /// The update locks the user's row until the transaction ends.
    static func advance(userID: UInt64, from stored: Stored, _ merge: Merge, on connection: Connection) throws -> Bool {
        let version = stored.version + 1
        let profile = merge.profile
        return try connection.execute(
            """
            UPDATE users SET sync_version = ?, total_xp = ?, current_level = ?, streak_days = ?, last_active_date = ?, profile_version = ?
            WHERE id = ? AND sync_version = ?
            """, version, profile.totalXP, profile.currentLevel, profile.streakDays, profile.lastActiveDate,
            merge.profileChanged ? version : stored.profileVersion, userID, stored.version
        ).affectedRows == 1
    }

    /// Stores each merged profile as its user's, changed at their current version: one batch
    /// execution. The rows must be locked by this transaction, which moved their versions on.
    static func storeProfiles(_ profiles: [(userID: UInt64, profile: SyncProfile)], on connection: Connection) throws {
        _ = try connection.executeBatch(
            """
            UPDATE users SET total_xp = ?, current_level = ?, streak_days = ?, last_active_date = ?, profile_version = sync_version
            WHERE id = ?
            """,
            rows: profiles.map {
                [$0.profile.totalXP, $0.profile.currentLevel, $0.profile.streakDays, $0.profile.lastActiveDate, $0.userID]
            })
    }

    /// The versions of `userIDs` (sorted, so that batches lock in one order), locked until the
    /// transaction ends; users that are gone are missing.
    static func lockVersions(of userIDs: [UInt64], on connection: Connection) throws -> [UInt64: UInt64] {
        var versions: [UInt64: UInt64] = [:]
        for chunk in inListChunks(userIDs) {
            let list = placeholders(chunk.count)
            for row in try connection.query("SELECT id, sync_version FROM users WHERE id IN (\(raw: list)) FOR UPDATE", binds: chunk) {
                versions[try row.decode(column: "id")] = try row.decode(column: "sync_version")
            }
        }
        return versions
    }

    /// Moves the versions of `userIDs` on by one; their rows must be locked by this transaction.
    static func advance(_ userIDs: [UInt64], on connection: Connection) throws {
        for chunk in inListChunks(userIDs) {
            let list = placeholders(chunk.count)
            _ = try connection.execute("UPDATE users SET sync_version = sync_version + 1 WHERE id IN (\(raw: list))", binds: chunk)
        }
    }

    /// Items with the same key merged into one (a device may list an item twice).
    static func collapse<Item: SyncItem>(_ items: [Item]) -> [Item] {
        guard items.count > 1 else { return items }
        var position: [Item.Key: Int] = [:]
        position.reserveCapacity(items.count)
        var collapsed: [Item] = []
        collapsed.reserveCapacity(items.count)
        for item in items {
            let key = item.key
            if let index = position[key] {
                collapsed[index] = collapsed[index].merged(with: item)
            } else {
                position[key] = collapsed.count
                collapsed.append(item)
            }
        }
        return collapsed
    }

    // MARK: - Progress

    static let progressColumns = "belief_system_id, lesson_id, status, score, earned_xp, completed_at"

    static func lesson(_ row: Row) throws -> LessonProgress {
        LessonProgress(
            beliefSystemID: try row.decode(column: "belief_system_id"), lessonID: try row.decode(column: "lesson_id"),
            status: LessonStatus(rawValue: try row.decode(column: "status")) ?? .notStarted, score: try row.decode(column: "score"),
            earnedXP: try row.decode(column: "earned_xp"), completedAt: try row.decode(column: "completed_at"))
    }

    /// Upserts lessons, each with its user and the version that changed it: one batch execution.
    static func write(_ lessons: [(userID: UInt64, version: UInt64, lesson: LessonProgress)], on connection: Connection) throws {
        _ = try connection.executeBatch(
            """
            INSERT INTO progress (user_id, \(raw: progressColumns), version) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON DUPLICATE KEY UPDATE status = VALUES(status), score = VALUES(score), earned_xp = VALUES(earned_xp),
                completed_at = VALUES(completed_at), version = VALUES(version), updated_at = UTC_TIMESTAMP(3)
            """,
            rows: lessons.map { row in
                let lesson = row.lesson
                return [
                    row.userID, lesson.beliefSystemID, lesson.lessonID, lesson.status.rawValue, lesson.score, lesson.earnedXP,
                    lesson.completedAt, row.version,
                ]
            })
    }

    // MARK: - Achievements

    static let achievementColumns = "achievement_id, progress, completed, completed_at"

    static func achievement(_ row: Row) throws -> AchievementProgress {
        AchievementProgress(
            achievementID: try row.decode(column: "achievement_id"), progress: try row.decode(column: "progress"),
            completed: try row.decode(column: "completed"), completedAt: try row.decode(column: "completed_at"))
    }

    /// Upserts achievements, each with its user and the version that changed it: one batch execution.
    static func write(_ achievements: [(userID: UInt64, version: UInt64, achievement: AchievementProgress)], on connection: Connection)
        throws
    {
        _ = try connection.executeBatch(
            """
            INSERT INTO user_achievements (user_id, \(raw: achievementColumns), version) VALUES (?, ?, ?, ?, ?, ?)
            ON DUPLICATE KEY UPDATE progress = VALUES(progress), completed = VALUES(completed), completed_at = VALUES(completed_at),
                version = VALUES(version), updated_at = UTC_TIMESTAMP(3)
            """,
            rows: achievements.map { row in
                let item = row.achievement
                return [row.userID, item.achievementID, item.progress, item.completed, item.completedAt, row.version]
            })
    }

    // MARK: - Declared collections

    /// Upserts records, each with its user and the version that changed it: one batch execution.
    static func write(_ records: [(userID: UInt64, version: UInt64, record: MergedRecord)], on connection: Connection) throws {
        guard !records.isEmpty else { return }
        _ = try connection.executeBatch(
            """
            INSERT INTO sync_records (user_id, collection, item_key, body, deleted, deleted_at, version)
            VALUES (?, ?, ?, ?, ?, IF(? = 1, UTC_TIMESTAMP(3), NULL), ?)
            ON DUPLICATE KEY UPDATE body = VALUES(body), deleted_at = IF(VALUES(deleted) = 1, IFNULL(deleted_at, UTC_TIMESTAMP(3)), NULL),
                deleted = VALUES(deleted), version = VALUES(version), updated_at = UTC_TIMESTAMP(3)
            """,
            rows: records.map { row in
                let deleted = row.record.record.isDeleted
                return [row.userID, row.record.name, row.record.record.key, row.record.json, deleted, deleted, row.version]
            })
    }

    /// The placeholders of `count` values (`?, ?`) or rows (`(?, ?), (?, ?)` for `each: "(?, ?)"`) of
    /// a statement's list.
    static func placeholders(_ count: Int, each: String = "?") -> String {
        Array(repeating: each, count: count).joined(separator: ", ")
    }

    /// `values` for `IN (...)` lists: chunks of at most 64, the last one padded to a power of two by
    /// repeating its last value (a repeat changes nothing in such a list), so that a batch of any
    /// size takes one statement of few shapes.
    package static func inListChunks<Value>(_ values: [Value]) -> [[Value]] {
        stride(from: 0, to: values.count, by: inListSizes[0]).map { start in
            let chunk = Array(values[start..<min(start + inListSizes[0], values.count)])
            let size = inListSizes.last { $0 >= chunk.count }!
            return chunk + repeatElement(chunk[chunk.count - 1], count: size - chunk.count)
        }
    }
}
