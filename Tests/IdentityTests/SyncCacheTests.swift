import AccountData
import Allocator
import Foundation
import Identity
import StrictJSON
import SyncRules
import Testing

/// The sync cache's own measure of its memory against what malloc hands out for it.
@Suite struct SyncCacheTests {
    /// A declaration like examples/sync/collections.json's workouts.
    static let declared = DeclaredCollections(
        try! SyncSchema(
            declaration: Array(
                """
                {"collections": {"workouts": {"key": ["workoutId"], "fields": {
                    "workoutId": {"type": "id"},
                    "note": {"type": "string", "maxLength": 500, "merge": "latestWins"},
                    "distance": {"type": "integer", "min": 0, "max": 1000000, "merge": "maximum"},
                    "laps": {"type": "integer", "min": 0, "max": 10000, "merge": "counter"},
                    "tags": {"type": "set", "maxCount": 20, "maxLength": 32, "merge": "union"}},
                  "deletion": {"tombstoneDays": 30}}}}
                """.utf8)))

    /// A workout read from its JSON as a sync reads a stored row: ids and device ids of 36
    /// characters, a note of 48 bytes, two devices in its counter, three tags.
    static func workout(_ unique: String) -> SyncRecord {
        func id(_ prefix: String) -> String { String((prefix + unique + String(repeating: "x", count: 36)).prefix(36)) }
        let body = """
            {"workoutId": "\(id("w"))", "note": {"value": "\(id("n"))-twelve-more", "at": 1764000000000, "device": "\(id("d"))"},
             "distance": 5200, "laps": {"\(id("a"))": 3, "\(id("b"))": 2}, "tags": ["run", "morning", "\(id("t"))"],
             "deleted": {"value": false, "at": 1764000000000, "device": "\(id("e"))"}}
            """
        var reader = JSONReader(Array(body.utf8), limits: .tokens)
        guard case .success(let record)? = try? declared.wire.codecs[SyncWire.firstDeclared].read(&reader, path: "", checked: false) else {
            fatalError("the test's workout does not read")
        }
        return record
    }

    /// The cache's measure and malloc's growth, filling a cache of 24 MiB to about nine tenths
    /// (nothing evicted, so that all it allocated is held) with users from `user`.
    static func measured(_ user: (SyncCache, UInt64) -> Void) -> (measure: Int, allocated: Int) {
        let capacity = 24 << 20
        let cache = SyncCache(capacity: capacity)
        let before = Allocator.allocatedBytes
        user(cache, 1)
        let perUser = cache.count.bytes
        for userID in 2...UInt64(capacity * 9 / 10 / perUser) { user(cache, userID) }
        let allocated = Allocator.allocatedBytes - before
        return withExtendedLifetime(cache) { (cache.count.bytes, allocated) }
    }

    /// Whether malloc's growth is within 5 % of the cache's measure; prints both when it is not.
    /// Called in a process of its own (an exit test): malloc's totals are the process's, which the
    /// other suites running at the same time would move.
    static func withinFivePercent(_ measured: (measure: Int, allocated: Int)) -> Bool {
        let (measure, allocated) = measured
        let within = Double(allocated) <= Double(measure) * 1.05 && Double(allocated) >= Double(measure) * 0.95
        if !within { print("allocated \(allocated) bytes, counted \(measure)") }
        return within
    }

    static func declaredUsers() -> (measure: Int, allocated: Int) {
        measured { cache, userID in cache.keep(userID: userID, records: [(0..<50).map { Self.workout("\(userID)-\($0)-") }]) }
    }

    static func builtInUsers(idLength: Int) -> (measure: Int, allocated: Int) {
        let padding = String(repeating: "x", count: idLength - 8)
        return measured { cache, userID in
            func id(_ prefix: String, _ number: Int) -> String { String((prefix + padding + "\(userID)-\(number)").suffix(idLength)) }
            cache.keep(
                userID: userID,
                records: [
                    (0..<20).map {
                        LessonProgress(
                            beliefSystemID: id("b", 0), lessonID: id("l", $0), status: .completed, score: 90, earnedXP: 40, completedAt: 1
                        ).record
                    },
                    (0..<5).map { AchievementProgress(achievementID: id("a", $0), progress: 5, completed: true, completedAt: 1).record },
                ])
        }
    }

    @Test("Users of declared records take what the cache counts for them, within 5 %")
    func declaredRecords() async {
        await #expect(processExitsWith: .success) { exit(Self.withinFivePercent(Self.declaredUsers()) ? 0 : 1) }
    }

    @Test("Users of lessons and achievements with 12-byte ids take what the cache counts for them, within 5 %")
    func builtInModelShortIDs() async {
        await #expect(processExitsWith: .success) { exit(Self.withinFivePercent(Self.builtInUsers(idLength: 12)) ? 0 : 1) }
    }

    @Test("Users of lessons and achievements with 40-byte ids take what the cache counts for them, within 5 %")
    func builtInModelLongIDs() async {
        await #expect(processExitsWith: .success) { exit(Self.withinFivePercent(Self.builtInUsers(idLength: 40)) ? 0 : 1) }
    }

    @Test("A full cache holds no more than its capacity by its own measure, its tables included")
    func withinCapacity() {
        let capacity = 4 << 20
        let cache = SyncCache(capacity: capacity, shards: 4)
        for userID in UInt64(1)...3_000 { cache.keep(userID: userID, records: [(0..<10).map { Self.workout("\(userID)-\($0)-") }]) }
        #expect(cache.count.bytes <= capacity)
        #expect(cache.count.bytes >= capacity * 9 / 10, "eviction makes room for one user at a time")
    }
}
