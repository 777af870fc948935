import Accounts
import Foundation
import MariaDB
import SIWATestSupport
import Server
import Synchronization
import Testing

/// Sync against MariaDB: order and repeats do not matter, unchanged data writes nothing, deltas
/// carry other devices' changes, concurrent syncs of one user lose nothing.
@Suite struct SyncStoreTests {
    let database: TestDatabase
    let connection: Connection

    init() throws {
        database = try TestDatabase.migrated()
        connection = try database.connect()
    }

    func newUser() throws -> UInt64 { try connection.execute("INSERT INTO users () VALUES ()").lastInsertID }

    func sync(_ userID: UInt64, _ changes: SyncChanges) throws -> SyncDelta {
        try #require(try SyncStore.sync(userID: userID, changes: changes, on: connection))
    }

    /// The whole stored state, in a canonical order.
    func everything(_ userID: UInt64) throws -> SyncDelta {
        var delta = try sync(userID, SyncChanges(cursor: nil, profile: nil, progress: [], achievements: []))
        delta.progress.sort { ($0.beliefSystemID, $0.lessonID) < ($1.beliefSystemID, $1.lessonID) }
        delta.achievements.sort { $0.achievementID < $1.achievementID }
        delta.cursor = 0
        delta.changed = 0
        return delta
    }

    /// Runs syncs 0..<count on 8 threads, each with its own connection (sync `i` on thread `i % 8`).
    /// - Returns: the errors, and the syncs that found no user.
    func concurrently(_ count: Int, _ sync: @escaping @Sendable (Int, Connection) throws -> SyncDelta?) -> [String] {
        let failures = Mutex<[String]>([])
        let configuration = database.configuration
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            do {
                let own = Connection(configuration: configuration)
                defer { own.close() }
                for index in stride(from: worker, to: count, by: 8) where try sync(index, own) == nil {
                    failures.withLock { $0.append("sync \(index): no user") }
                }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        return failures.withLock { $0 }
    }

    func randomSyncs(_ random: inout SplitMix64, count: Int) -> [SyncChanges] {
        (0..<count).map { _ in
            SyncChanges(
                cursor: nil, profile: Bool.random(using: &random) ? RandomChanges.profile(&random) : nil,
                progress: (0..<Int.random(in: 0...4, using: &random)).map { _ in RandomChanges.lesson(&random) },
                achievements: (0..<Int.random(in: 0...3, using: &random)).map { _ in RandomChanges.achievement(&random) })
        }
    }

    @Test("Random syncs applied in two orders, one with repeats, give the same stored state", arguments: [1, 2, 3, 4, 5] as [UInt64])
    func orderAndRepeats(seed: UInt64) throws {
        defer { connection.close(); database.drop() }
        var random = SplitMix64(state: seed)
        let syncs = randomSyncs(&random, count: 12)
        let one = try newUser(), two = try newUser()
        for changes in syncs { _ = try sync(one, changes) }
        for changes in (syncs + syncs.prefix(4)).shuffled(using: &random) { _ = try sync(two, changes) }
        #expect(try everything(one) == everything(two))
    }

    @Test("Re-sending what the server has writes nothing and keeps the cursor; a new device's null cursor gets everything")
    func unchangedAndFull() throws {
        defer { connection.close(); database.drop() }
        let user = try newUser()
        let changes = SyncChanges(
            cursor: nil, profile: SyncProfile(totalXP: 10, currentLevel: 2, streakDays: 3, lastActiveDate: "2026-11-20"),
            progress: [LessonProgress(beliefSystemID: "bs", lessonID: "l1", status: .completed, score: 9, earnedXP: 5, completedAt: 1000)],
            achievements: [AchievementProgress(achievementID: "a1", progress: 3, completed: false, completedAt: nil)])
        let first = try sync(user, changes)
        #expect(first.changed == 3 && first.cursor == 1)
        var again = changes
        again.cursor = first.cursor
        let second = try sync(user, again)
        #expect(second.changed == 0 && second.cursor == 1)
        #expect(second.progress.isEmpty && second.achievements.isEmpty && second.profile == nil, "nothing new since the cursor")
        let updated: Int = try connection.query("SELECT COUNT(*) FROM progress WHERE version > 1")[0].decode(at: 0)
        #expect(updated == 0)
        let full = try sync(user, SyncChanges(cursor: nil, profile: nil, progress: [], achievements: []))
        #expect(full.progress == changes.progress && full.achievements == changes.achievements && full.profile == changes.profile)
        let future = try sync(user, SyncChanges(cursor: 99, profile: nil, progress: [], achievements: []))
        #expect(future.progress.count == 1, "a cursor from the future gets everything")
    }

    @Test("Two devices with offline changes: each sync returns the other's changes; both converge")
    func twoDevices() throws {
        defer { connection.close(); database.drop() }
        let user = try newUser()
        let phone = try sync(user, SyncChanges(cursor: nil, profile: nil, progress: [
            LessonProgress(beliefSystemID: "bs", lessonID: "l1", status: .inProgress, score: 4, earnedXP: 1, completedAt: nil),
        ], achievements: []))
        let tablet = try sync(user, SyncChanges(cursor: nil, profile: nil, progress: [
            LessonProgress(beliefSystemID: "bs", lessonID: "l1", status: .completed, score: 2, earnedXP: 3, completedAt: 2000),
            LessonProgress(beliefSystemID: "bs", lessonID: "l2", status: .inProgress, score: 1, earnedXP: 0, completedAt: nil),
        ], achievements: []))
        #expect(tablet.progress.first { $0.lessonID == "l1" } == LessonProgress(
            beliefSystemID: "bs", lessonID: "l1", status: .completed, score: 4, earnedXP: 3, completedAt: 2000))
        let phoneAgain = try sync(user, SyncChanges(cursor: phone.cursor, profile: nil, progress: [], achievements: []))
        #expect(Set(phoneAgain.progress.map(\.lessonID)) == ["l1", "l2"], "the tablet's changes reach the phone")
        #expect(phoneAgain.cursor == tablet.cursor)
    }

    @Test("Concurrent syncs of one user on separate connections lose nothing")
    func concurrent() throws {
        defer { connection.close(); database.drop() }
        let user = try newUser()
        var random = SplitMix64(state: 99)
        let syncs = randomSyncs(&random, count: 24)
        let failures = concurrently(syncs.count) { index, own in
            try SyncStore.sync(userID: user, changes: syncs[index], on: own)
        }
        #expect(failures.isEmpty)
        let sequential = try newUser()
        for changes in syncs { _ = try sync(sequential, changes) }
        #expect(try everything(user) == everything(sequential))
    }

    @Test("Concurrent syncs of several users through one group commit and one cache lose nothing")
    func groupCommit() throws {
        defer { connection.close(); database.drop() }
        let users = try (0..<4).map { _ in try newUser() }
        var random = SplitMix64(state: 7)
        let syncs = randomSyncs(&random, count: 64).map { (user: Int.random(in: 0..<4, using: &random), changes: $0) }
        let group = SyncGroupCommit(), cache = SyncCache()
        let failures = concurrently(syncs.count) { index, own in
            try SyncStore.sync(userID: users[syncs[index].user], changes: syncs[index].changes, on: own, group: group, cache: cache)
        }
        #expect(failures.isEmpty)
        #expect(group.statistics.committedWrites > 0, "writes went through the group commit")
        for (index, user) in users.enumerated() {
            let sequential = try newUser()
            for sync in syncs where sync.user == index { _ = try self.sync(sequential, sync.changes) }
            #expect(try everything(user) == everything(sequential))
        }
    }

    @Test("A cached state another process moved past is caught: the delta carries its changes, a write merges with them")
    func staleCache() throws {
        defer { connection.close(); database.drop() }
        let user = try newUser()
        let cache = SyncCache(), group = SyncGroupCommit()
        func cached(_ changes: SyncChanges) throws -> SyncDelta {
            try #require(try SyncStore.sync(userID: user, changes: changes, on: connection, group: group, cache: cache))
        }
        let l1 = LessonProgress(beliefSystemID: "bs", lessonID: "l1", status: .inProgress, score: 4, earnedXP: 1, completedAt: nil)
        let first = try cached(SyncChanges(cursor: nil, profile: nil, progress: [l1], achievements: []))
        #expect(cache.count == (users: 1, items: 2) && first.cursor == 1)
        // Another server process (no cache) writes l2.
        let l2 = LessonProgress(beliefSystemID: "bs", lessonID: "l2", status: .completed, score: 9, earnedXP: 2, completedAt: 5)
        _ = try sync(user, SyncChanges(cursor: nil, profile: nil, progress: [l2], achievements: []))
        // Re-sending l1 changes nothing, but the answer must carry l2 and the stored cursor.
        let unchanged = try cached(SyncChanges(cursor: first.cursor, profile: nil, progress: [l1], achievements: []))
        #expect(unchanged.cursor == 2 && unchanged.progress == [l2] && unchanged.changed == 0)
        // The other process moves l1 on; a write from the stale cache must not undo it.
        let faster = LessonProgress(beliefSystemID: "bs", lessonID: "l1", status: .completed, score: 7, earnedXP: 1, completedAt: 9)
        _ = try sync(user, SyncChanges(cursor: nil, profile: nil, progress: [faster], achievements: []))
        var better = l1
        better.earnedXP = 3
        let written = try cached(SyncChanges(cursor: 2, profile: nil, progress: [better], achievements: []))
        var expected = faster
        expected.earnedXP = 3
        #expect(written.cursor == 4 && written.progress == [expected])
        #expect(try everything(user).progress == [expected, l2])
        // A deleted user's cached state answers nothing.
        _ = try connection.execute("DELETE FROM users WHERE id = ?", user)
        #expect(try SyncStore.sync(userID: user, changes: SyncChanges(cursor: 4, profile: nil, progress: [l1], achievements: []),
            on: connection, group: group, cache: cache) == nil)
    }

    @Test("The state cache stays within its item budget and skips users over the per-user limit")
    func cacheBounds() throws {
        defer { connection.close(); database.drop() }
        let cache = SyncCache(capacity: 10, maximumPerUser: 6, shards: 1)
        func syncCached(lessons: Int) throws {
            let progress = (0..<lessons).map {
                LessonProgress(beliefSystemID: "bs", lessonID: "l\($0)", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil)
            }
            _ = try SyncStore.sync(
                userID: try newUser(), changes: SyncChanges(cursor: nil, profile: nil, progress: progress, achievements: []),
                on: connection, cache: cache)
        }
        try syncCached(lessons: 5)
        try syncCached(lessons: 3)
        #expect(cache.count == (users: 2, items: 10))
        try syncCached(lessons: 2)
        #expect(cache.count.items <= 10 && cache.count.users >= 1, "older entries made room")
        let before = cache.count
        try syncCached(lessons: 7)
        #expect(cache.count == before, "a user over the per-user limit is not kept")
    }
}
