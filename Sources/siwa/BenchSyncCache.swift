import Accounts
import ArgumentParser
import Foundation
import SyncRules

struct BenchSyncCache: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-sync-cache",
        abstract: "Measure the resident memory of a full sync cache against its bound.",
        discussion: """
            Fills a cache of the server's size with users of synthetic progress, three times over so that \
            eviction runs as on a busy server, and prints the growth of this process's resident memory \
            against the cache's bound. scripts/bench cache runs it with short and with long ids.
            """)

    @Option(help: "The cache's bound in MiB (the server's is 160).")
    var megabytes = SyncCache.defaultCapacity / 1024 / 1024

    @Option(help: "Lessons per user.")
    var lessons = 20

    @Option(help: "Achievements per user.")
    var achievements = 5

    @Option(help: "Bytes of each id (belief system, lesson, achievement).")
    var idLength = 12

    func run() throws {
        let capacity = megabytes * 1024 * 1024
        let cache = SyncCache(capacity: capacity)
        let before = try Self.residentBytes()
        let padding = String(repeating: "x", count: max(0, idLength - 8))
        func id(_ prefix: Character, _ number: Int) -> String {
            String(prefix) + padding + String(format: "%07d", number % 10_000_000)
        }
        var userID: UInt64 = 0
        var userCost = 0
        // Three bounds' worth of users, each with ids of its own: the later ones evict the first.
        while userCost == 0 || Int(userID) * userCost < 3 * capacity {
            userID += 1
            let base = Int(userID) * (lessons + achievements)
            let progress = (0..<lessons).map {
                LessonProgress(
                    beliefSystemID: id("b", base), lessonID: id("l", base + $0), status: .completed, score: 90, earnedXP: 40,
                    completedAt: 1_795_000_000_000)
            }
            let earned = (0..<achievements).map {
                AchievementProgress(achievementID: id("a", base + $0), progress: 5, completed: true, completedAt: 1_795_000_000_000)
            }
            cache.keep(userID: userID, lessons: progress, achievements: earned)
            if userCost == 0 { userCost = cache.count.bytes }
        }
        let after = try Self.residentBytes()
        let held = cache.count
        let growth = Double(after - before) / 1024 / 1024
        print(
            "sync cache: \(held.users) users, \(held.items) items, \(held.bytes / 1024 / 1024) MiB by its measure, ids of \(idLength) bytes"
        )
        print(
            String(
                format: "resident memory growth: %.1f MiB against the bound of %d MiB: %.2fx (target 0.8x to 1.2x)", growth, megabytes,
                growth / Double(megabytes)))
    }

    /// This process's resident memory (the second field of /proc/self/statm, in pages).
    static func residentBytes() throws -> Int {
        let statm = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { throw ValidationError("cannot read /proc/self/statm") }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
