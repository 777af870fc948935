import AccountData
import Allocator
import ArgumentParser
import Foundation
import Identity
import StrictJSON
import SyncRules
import Synchronization
import Threads

struct BenchSyncCache: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-sync-cache",
        abstract: "Measure the resident memory of a full sync cache against its bound.",
        discussion: """
            Fills a cache of the server's size with users of synthetic progress, or of records of declared \
            collections read from their stored JSON as a sync reads them, from several threads as the \
            server's workers fill it, three times over so that eviction runs as on a busy server, and \
            prints the growth of this process's resident memory, and of the bytes it has allocated, \
            against the cache's bound. scripts/bench cache runs it with short and long ids, and with the \
            example declaration's records of a realistic size and of the largest size it allows.
            """)

    enum Shape: String, ExpressibleByArgument, CaseIterable {
        /// Ids and device ids of 36 characters (UUIDs), strings of up to 48 bytes, a few tags and
        /// two devices in a counter.
        case realistic
        /// Every value as large as its field allows: ids of 128 characters, strings and sets at
        /// their declared bounds, counters of 256 devices.
        case largest
    }

    @Option(help: "The cache's bound in MiB (the server's is 160).")
    var megabytes = SyncCache.defaultCapacity / 1024 / 1024

    @Option(help: "Lessons per user.")
    var lessons = 20

    @Option(help: "Achievements per user.")
    var achievements = 5

    @Option(help: "Bytes of each id (belief system, lesson, achievement).")
    var idLength = 12

    @Option(help: "A declaration file (examples/sync/collections.json): fill the cache with its records instead of lessons.")
    var collections: String?

    @Option(help: "Records of each declared collection per user (at most its itemsPerUser).")
    var records = 50

    @Option(help: "The size of each declared record's values.")
    var shape = Shape.realistic

    @Option(help: "Threads filling the cache at once, as the server's workers do.")
    var threads = 8

    func run() throws {
        let capacity = megabytes * 1024 * 1024
        let cache = SyncCache(capacity: capacity)
        let declared = try collections.map {
            DeclaredCollections(try SyncSchema(declaration: Array(try Data(contentsOf: URL(fileURLWithPath: $0)))))
        }
        let fill: @Sendable (UInt64) -> Void
        if let declared {
            let records = records
            let shape = shape
            fill = { userID in
                cache.keep(userID: userID, records: [[], []] + Self.records(of: userID, declared, count: records, shape: shape))
            }
        } else {
            let (lessons, achievements, idLength) = (lessons, achievements, idLength)
            fill = { userID in Self.keepProgress(of: userID, in: cache, lessons: lessons, achievements: achievements, idLength: idLength) }
        }
        let before = try Self.residentBytes()
        let allocatedBefore = Allocator.allocatedBytes
        // One user first, for the cost of one; then three bounds' worth of users, each with ids of
        // its own, from `threads` threads: the later ones evict the first.
        fill(1)
        let userCost = max(cache.count.bytes, 1)
        let users = UInt64(3 * capacity / userCost + 1)
        let next = Atomic<UInt64>(2)
        let workers = try (0..<max(threads, 1)).map { index in
            try OwnedThread(name: "bench-\(index)") { _ in
                while true {
                    let userID = next.add(1, ordering: .relaxed).oldValue
                    guard userID <= users else { return }
                    fill(userID)
                }
            }
        }
        for worker in workers { worker.join() }
        let after = try Self.residentBytes()
        let allocated = Double(Allocator.allocatedBytes - allocatedBefore) / 1024 / 1024
        let held = cache.count
        let growth = Double(after - before) / 1024 / 1024
        let measure = Double(held.bytes) / 1024 / 1024
        let what =
            declared == nil
            ? "ids of \(idLength) bytes" : "\(records) \(shape.rawValue) records of each collection a user, \(threads) threads"
        print("sync cache: \(held.users) users, \(held.items) items, \(String(format: "%.1f", measure)) MiB by its measure, \(what)")
        print(String(format: "allocated by malloc: %.1f MiB, %.2fx its measure", allocated, allocated / measure))
        print(
            String(
                format: "resident memory growth: %.1f MiB against the bound of %d MiB: %.2fx (target 0.8x to 1.2x)", growth, megabytes,
                growth / Double(megabytes)))
    }

    static func keepProgress(of userID: UInt64, in cache: SyncCache, lessons: Int, achievements: Int, idLength: Int) {
        let padding = String(repeating: "x", count: max(0, idLength - 8))
        func id(_ prefix: Character, _ number: Int) -> String {
            String(prefix) + padding + String(format: "%07d", number % 10_000_000)
        }
        let base = Int(userID) * (lessons + achievements)
        let progress = (0..<lessons).map {
            LessonProgress(
                beliefSystemID: id("b", base), lessonID: id("l", base + $0), status: .completed, score: 90, earnedXP: 40,
                completedAt: 1_795_000_000_000)
        }
        let earned = (0..<achievements).map {
            AchievementProgress(achievementID: id("a", base + $0), progress: 5, completed: true, completedAt: 1_795_000_000_000)
        }
        // Read from their JSON, as a sync reads their rows.
        let wire = SyncWire.builtIn
        func read(_ record: SyncRecord, _ collection: Int) -> SyncRecord? {
            var reader = JSONReader(wire.codecs[collection].json(record), limits: .tokens)
            guard case .success(let read)? = try? wire.codecs[collection].read(&reader, path: "", checked: false) else { return nil }
            return read
        }
        cache.keep(
            userID: userID,
            records: [
                progress.compactMap { read($0.record, SyncWire.progress) }, earned.compactMap { read($0.record, SyncWire.achievements) },
                [],
            ])
    }

    /// A user's records of each declared collection, each read from its JSON as a sync reads a
    /// stored row, so that every string is an allocation of its own as on the server.
    static func records(of userID: UInt64, _ declared: DeclaredCollections, count: Int, shape: Shape) -> [[SyncRecord]] {
        declared.wire.codecs[SyncWire.firstDeclared..<declared.wire.profile].enumerated().map { index, codec in
            (0..<min(count, codec.collection.limits.itemsPerUser)).compactMap { number in
                let body = json(of: codec.collection, unique: "\(userID)-\(index)-\(number)", shape: shape)
                var reader = JSONReader(Array(body.utf8), limits: .tokens)
                guard case .success(let record)? = try? codec.read(&reader, path: "", checked: false) else { return nil }
                return record
            }
        }
    }

    /// A record of `collection` as JSON, its ids and strings starting with `unique`.
    static func json(of collection: SyncCollection, unique: String, shape: Shape) -> String {
        let large = shape == .largest
        func text(_ length: Int, _ tag: String) -> String {
            let start = tag + "-" + unique + "-"
            return String((start + String(repeating: "x", count: max(0, length - start.count))).prefix(length))
        }
        let device = text(large ? 128 : 36, "d")
        func plain(_ type: SyncFieldType, _ name: String) -> String {
            switch type {
            case .integer(_, let maximum): String(min(maximum, 5_200))
            case .string(let length): "\"\(text(large ? length : min(length, 48), name))\""
            case .id: "\"\(text(large ? 128 : 36, name))\""
            case .boolean: "true"
            case .time: "1764000000000"
            case .date: "\"2026-01-15\""
            case .enumeration(let cases): "\"\(cases.last ?? "")\""
            case .stringSet(let count, let length):
                "["
                    + (0..<(large ? count : min(count, 3))).map { "\"\(text(large ? length : min(length, 8), "\(name)\($0)"))\"" }.joined(
                        separator: ",") + "]"
            }
        }
        var members = collection.keys.map { "\"\($0.name)\":\(plain($0.type, $0.name))" }
        for field in collection.fields {
            let value: String
            switch field.rule {
            case .latestWins: value = "{\"value\":\(plain(field.type, field.name)),\"at\":1764000000000,\"device\":\"\(device)\"}"
            case .counter:
                value =
                    "{" + (0..<(large ? 256 : 2)).map { "\"\(text(large ? 128 : 36, "d\($0)"))\":\(1 + $0)" }.joined(separator: ",") + "}"
            default: value = plain(field.type, field.name)
            }
            members.append("\"\(field.name)\":\(value)")
        }
        if collection.tombstoneDays != nil {
            members.append("\"\(SyncCollection.deletedMember)\":{\"value\":false,\"at\":1764000000000,\"device\":\"\(device)\"}")
        }
        return "{" + members.joined(separator: ",") + "}"
    }

    /// This process's resident memory (the second field of /proc/self/statm, in pages).
    static func residentBytes() throws -> Int {
        let statm = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { throw ValidationError("cannot read /proc/self/statm") }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
