package import MariaDB

/// What a device sends to `POST /sync`, already validated.
package struct SyncChanges: Sendable {
    /// The last change version the device has seen; nil for everything.
    package var cursor: UInt64?
    package var profile: SyncProfile?
    package var progress: [LessonProgress]
    package var achievements: [AchievementProgress]

    package init(cursor: UInt64?, profile: SyncProfile?, progress: [LessonProgress], achievements: [AchievementProgress]) {
        self.cursor = cursor
        self.profile = profile
        self.progress = progress
        self.achievements = achievements
    }
}

/// What changed for the user since the device's cursor, with the new cursor.
package struct SyncDelta: Sendable, Equatable {
    package var cursor: UInt64
    /// The profile when it changed since the cursor (or always, for a full sync).
    package var profile: SyncProfile?
    package var progress: [LessonProgress]
    package var achievements: [AchievementProgress]
    /// How many stored rows (progress, achievements, profile) this sync changed.
    package var changed: Int
}

/// The SQL of sync. One sync is one transaction that first locks the user's row, so two devices of
/// one user are merged one after the other and no update is lost; the merge itself is
/// `SyncMerge.swift`'s. Only rows whose merged state differs are written, so re-sending what the
/// server has writes nothing.
package enum SyncStore {
    /// Keys looked up per statement; the last key is repeated to fill a statement, so only a few
    /// statement shapes are ever prepared.
    static let lookupChunk = 32
    /// Rows written per statement, for the same reason (a repeated row rewrites the same values).
    static let writeChunks = [4, 16, 64]

    /// Merges `changes` into `userID`'s state and returns what changed since the cursor. Must run
    /// inside a transaction.
    /// - Returns: nil when the user does not exist (deleted meanwhile).
    package static func sync(userID: UInt64, changes: SyncChanges, on connection: Connection) throws -> SyncDelta? {
        guard
            let user = try connection.query(
                """
                SELECT sync_version, total_xp, current_level, streak_days, DATE_FORMAT(last_active_date, '%Y-%m-%d'), profile_version
                FROM users WHERE id = ? FOR UPDATE
                """, userID
            ).first
        else { return nil }
        let previousVersion: UInt64 = try user.decode(at: 0)
        let version = previousVersion + 1
        let storedProfile = SyncProfile(
            totalXP: try user.decode(at: 1), currentLevel: try user.decode(at: 2), streakDays: try user.decode(at: 3),
            lastActiveDate: try user.decode(at: 4))
        let profileVersion: UInt64 = try user.decode(at: 5)
        var changed = 0

        let lessons = collapse(changes.progress, key: { "\($0.beliefSystemID)\u{0}\($0.lessonID)" }, merge: { $0.merged(with: $1) })
        let storedLessons = try storedProgress(userID: userID, keys: lessons.map { ($0.beliefSystemID, $0.lessonID) }, on: connection)
        let changedLessons = lessons.compactMap { incoming -> LessonProgress? in
            let stored = storedLessons["\(incoming.beliefSystemID)\u{0}\(incoming.lessonID)"]
            let merged = stored?.merged(with: incoming) ?? incoming
            return merged == stored ? nil : merged
        }
        try write(changedLessons, version: version, userID: userID, on: connection)

        let achievements = collapse(changes.achievements, key: \.achievementID, merge: { $0.merged(with: $1) })
        let storedAchievements = try storedAchievements(userID: userID, ids: achievements.map(\.achievementID), on: connection)
        let changedAchievements = achievements.compactMap { incoming -> AchievementProgress? in
            let stored = storedAchievements[incoming.achievementID]
            let merged = stored?.merged(with: incoming) ?? incoming
            return merged == stored ? nil : merged
        }
        try write(changedAchievements, version: version, userID: userID, on: connection)
        changed = changedLessons.count + changedAchievements.count

        let mergedProfile = changes.profile.map { storedProfile.merged(with: $0) } ?? storedProfile
        let profileChanged = mergedProfile != storedProfile
        if profileChanged { changed += 1 }
        if changed > 0 {
            _ = try connection.execute(
                """
                UPDATE users SET sync_version = ?, total_xp = ?, current_level = ?, streak_days = ?, last_active_date = ?,
                    profile_version = ?
                WHERE id = ?
                """, version, mergedProfile.totalXP, mergedProfile.currentLevel, mergedProfile.streakDays, mergedProfile.lastActiveDate,
                profileChanged ? version : profileVersion, userID)
        }
        let current = changed > 0 ? version : previousVersion
        // A cursor from the future (a restored backup, another server) gets everything.
        let since = changes.cursor.flatMap { $0 <= previousVersion ? $0 : nil } ?? 0
        let profileSince = profileChanged ? version : profileVersion
        return SyncDelta(
            cursor: current, profile: since == 0 || profileSince > since ? mergedProfile : nil,
            progress: try progressChanged(userID: userID, since: since, on: connection),
            achievements: try achievementsChanged(userID: userID, since: since, on: connection), changed: changed)
    }

    /// Items with the same key merged into one (a device may list an item twice).
    static func collapse<Item>(_ items: [Item], key: (Item) -> String, merge: (Item, Item) -> Item) -> [Item] {
        var order: [String] = []
        var merged: [String: Item] = [:]
        for item in items {
            let key = key(item)
            if let existing = merged[key] { merged[key] = merge(existing, item) } else {
                order.append(key)
                merged[key] = item
            }
        }
        return order.map { merged[$0]! }
    }

    /// `keys` in chunks of `lookupChunk`, the last one filled up with its last element.
    static func padded<Key>(_ keys: [Key], chunk: Int) -> [[Key]] {
        stride(from: 0, to: keys.count, by: chunk).map { start in
            let slice = Array(keys[start..<min(start + chunk, keys.count)])
            return slice + Array(repeating: slice[slice.count - 1], count: chunk - slice.count)
        }
    }

    // MARK: - Progress

    static let progressColumns = "belief_system_id, lesson_id, status, score, earned_xp, completed_at"

    static func lesson(_ row: Row) throws -> LessonProgress {
        LessonProgress(
            beliefSystemID: try row.decode(at: 0), lessonID: try row.decode(at: 1),
            status: LessonStatus(rawValue: try row.decode(at: 2)) ?? .notStarted, score: try row.decode(at: 3),
            earnedXP: try row.decode(at: 4), completedAt: try row.decode(at: 5))
    }

    static func storedProgress(userID: UInt64, keys: [(String, String)], on connection: Connection) throws -> [String: LessonProgress] {
        var stored: [String: LessonProgress] = [:]
        for chunk in padded(keys, chunk: lookupChunk) {
            let tuples = Array(repeating: "(?, ?)", count: chunk.count).joined(separator: ", ")
            let binds: [any DatabaseValueConvertible] = [userID] + chunk.flatMap { [$0.0, $0.1] as [any DatabaseValueConvertible] }
            for row in try connection.query(
                "SELECT \(progressColumns) FROM progress WHERE user_id = ? AND (belief_system_id, lesson_id) IN (\(tuples))", binds: binds)
            {
                let lesson = try lesson(row)
                stored["\(lesson.beliefSystemID)\u{0}\(lesson.lessonID)"] = lesson
            }
        }
        return stored
    }

    static func write(_ lessons: [LessonProgress], version: UInt64, userID: UInt64, on connection: Connection) throws {
        try writeChunked(lessons) { chunk in
            let rows = Array(repeating: "(?, ?, ?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let binds: [any DatabaseValueConvertible] = chunk.flatMap { lesson -> [any DatabaseValueConvertible] in
                [userID, lesson.beliefSystemID, lesson.lessonID, lesson.status.rawValue, lesson.score, lesson.earnedXP, lesson.completedAt, version]
            }
            _ = try connection.execute(
                """
                INSERT INTO progress (user_id, \(progressColumns), version) VALUES \(rows)
                ON DUPLICATE KEY UPDATE status = VALUES(status), score = VALUES(score), earned_xp = VALUES(earned_xp),
                    completed_at = VALUES(completed_at), version = VALUES(version), updated_at = UTC_TIMESTAMP(3)
                """, binds: binds)
        }
    }

    static func progressChanged(userID: UInt64, since: UInt64, on connection: Connection) throws -> [LessonProgress] {
        try connection.query(
            "SELECT \(progressColumns) FROM progress WHERE user_id = ? AND version > ? ORDER BY version, belief_system_id, lesson_id",
            userID, since
        ).map(lesson)
    }

    // MARK: - Achievements

    static let achievementColumns = "achievement_id, progress, completed, completed_at"

    static func achievement(_ row: Row) throws -> AchievementProgress {
        AchievementProgress(
            achievementID: try row.decode(at: 0), progress: try row.decode(at: 1), completed: try row.decode(at: 2),
            completedAt: try row.decode(at: 3))
    }

    static func storedAchievements(userID: UInt64, ids: [String], on connection: Connection) throws -> [String: AchievementProgress] {
        var stored: [String: AchievementProgress] = [:]
        for chunk in padded(ids, chunk: lookupChunk) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
            let binds: [any DatabaseValueConvertible] = [userID] + chunk
            for row in try connection.query(
                "SELECT \(achievementColumns) FROM user_achievements WHERE user_id = ? AND achievement_id IN (\(marks))", binds: binds)
            {
                let achievement = try achievement(row)
                stored[achievement.achievementID] = achievement
            }
        }
        return stored
    }

    static func write(_ achievements: [AchievementProgress], version: UInt64, userID: UInt64, on connection: Connection) throws {
        try writeChunked(achievements) { chunk in
            let rows = Array(repeating: "(?, ?, ?, ?, ?, ?)", count: chunk.count).joined(separator: ", ")
            let binds: [any DatabaseValueConvertible] = chunk.flatMap { item -> [any DatabaseValueConvertible] in
                [userID, item.achievementID, item.progress, item.completed, item.completedAt, version]
            }
            _ = try connection.execute(
                """
                INSERT INTO user_achievements (user_id, \(achievementColumns), version) VALUES \(rows)
                ON DUPLICATE KEY UPDATE progress = VALUES(progress), completed = VALUES(completed), completed_at = VALUES(completed_at),
                    version = VALUES(version), updated_at = UTC_TIMESTAMP(3)
                """, binds: binds)
        }
    }

    static func achievementsChanged(userID: UInt64, since: UInt64, on connection: Connection) throws -> [AchievementProgress] {
        try connection.query(
            "SELECT \(achievementColumns) FROM user_achievements WHERE user_id = ? AND version > ? ORDER BY version, achievement_id",
            userID, since
        ).map(achievement)
    }

    /// Writes `items` with as few statements as the chunk sizes allow, each chunk padded by
    /// repeating its last row.
    static func writeChunked<Item>(_ items: [Item], _ write: ([Item]) throws -> Void) throws {
        var start = 0
        while start < items.count {
            let remaining = items.count - start
            let size = writeChunks.first { $0 >= remaining } ?? writeChunks[writeChunks.count - 1]
            let slice = Array(items[start..<min(start + size, items.count)])
            try write(slice + Array(repeating: slice[slice.count - 1], count: size - slice.count))
            start += size
        }
    }
}
