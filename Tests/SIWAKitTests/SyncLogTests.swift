import Foundation
import SIWATestSupport
import StrictJSON
import SyncRules
import Testing

@testable import SIWAKit

/// The sync state's log: a change costs one small write however long the queue (counted, not
/// timed), the state survives a restart and a crash within a write, batches stay within the
/// server's body limit, and a counter's increments from several devices add up.
@Suite(.timeLimit(.minutes(1))) struct SyncLogTests {
    struct Workout: SyncedRecord, Equatable {
        static let collection = "workouts"
        var workoutId: String
        var note: String?
        var laps: Int64
    }

    static let schema = try! SyncSchema(
        declaration: Array(
            #"""
            {"collections": {"workouts": {"key": ["workoutId"], "limits": {"itemsPerRequest": 500},
              "fields": {"workoutId": {"type": "id"}, "note": {"type": "string", "maxLength": 20, "merge": "latestWins"},
                         "laps": {"type": "integer", "max": 1000000, "merge": "counter"}}}}}
            """#.utf8))

    /// A `MemoryStorage` that counts its writes and the bytes written.
    final class CountingStorage: AppendingStorage, @unchecked Sendable {  // counts only touched with `lock` held
        let inner = MemoryStorage()
        private let lock = NSLock()
        private var counts = (writes: 0, bytes: 0)
        var written: (writes: Int, bytes: Int) { lock.withLock { counts } }

        func read(_ key: String) throws -> Data? { try inner.read(key) }
        func write(_ data: Data, for key: String) throws {
            lock.withLock { counts = (counts.writes + 1, counts.bytes + data.count) }
            try inner.write(data, for: key)
        }
        func delete(_ key: String) throws { try inner.delete(key) }
        func append(_ data: Data, to key: String) throws {
            lock.withLock { counts = (counts.writes + 1, counts.bytes + data.count) }
            try inner.append(data, to: key)
        }
    }

    /// A stand-in of the server's sync that merges what it receives by the same rules, answers
    /// nothing new, and keeps every body's size.
    final class MergingServer: Sendable {
        let wire = SyncWire(declared: SyncLogTests.schema)
        let lessons = Locked([LessonKey: LessonProgress]())
        let workouts = Locked([String: SyncRecord]())
        let bodySizes = Locked([Int]())
        let requests = Locked(0)

        func handle(_ request: TestHTTPServer.Request) -> TestHTTPServer.Response {
            guard request.path == "/sync" else { return Answers.signIn(1) }
            bodySizes.update { $0.append(request.body.count) }
            guard let body = try? wire.read(request.body, limits: SyncClient.answerLimits),
                let items = try? body.records(maximumItems: .max)
            else { return Answers.error(400, "invalid_request") }
            let collection = wire.codecs[SyncWire.firstDeclared].collection
            for item in items {
                switch item.collection {
                case SyncWire.progress:
                    let lesson = LessonProgress(record: item.record)!
                    lessons.update { $0[lesson.key] = $0[lesson.key].map { $0.merged(with: lesson) } ?? lesson }
                case SyncWire.firstDeclared:
                    workouts.update { $0[item.record.key] = $0[item.record.key].map { collection.merged($0, item.record) } ?? item.record }
                default: break
                }
            }
            let cursor = requests.increment()
            return Answers.json(
                200, #"{"cursor":"\#(cursor)","profile":null,"progress":[],"achievements":[],"collections":{"workouts":[]}}"#)
        }
    }

    /// What recording `count` changes offline, then syncing them, wrote.
    struct Run {
        var recorded: (writes: Int, bytes: Int)
        var synced: (writes: Int, bytes: Int)
    }

    /// Records `count` changes offline (lessons, saves and counter increments), syncs them within
    /// 16 KiB requests, and checks that the server ends with exactly the device's changes.
    func recordAndSync(_ count: Int) async throws -> Run {
        let server = MergingServer()
        let harness = try ClientHarness { server.handle($0) }
        try await harness.signIn()
        let storage = CountingStorage()
        let device = try SyncClient(
            client: harness.client, storage: storage, collections: Self.schema, maximumRequestBytes: 16 * 1024)
        var laps: [String: Int64] = [:]
        var notes: [String: String] = [:]
        for index in 0..<count {
            let workout = "w\(index / 4 % 100)"
            switch index % 4 {
            case 0, 1:
                try await device.record(
                    LessonProgress(
                        beliefSystemID: "b", lessonID: "l\(100_000 + index)", status: .inProgress, score: Int64(index % 100), earnedXP: 1,
                        completedAt: nil))
            case 2:
                try await device.increment("laps", of: Workout(workoutId: workout, laps: 0), by: Int64(index % 7 + 1))
                laps[workout, default: 0] += Int64(index % 7 + 1)
            default:
                try await device.save(Workout(workoutId: workout, note: "n\(index)", laps: laps[workout] ?? 0))
                notes[workout] = "n\(index)"
            }
        }
        let recorded = storage.written
        try await device.sync()
        let total = storage.written
        #expect(await !device.hasPendingChanges)

        // The server holds exactly the device's changes: every lesson, each counter's sum, each
        // record's latest note.
        let view = await device.snapshot
        #expect(view.lessons.count == count - count / 2 && server.lessons.value.count == view.lessons.count)
        #expect(Dictionary(uniqueKeysWithValues: view.lessons.map { ($0.key, $0) }) == server.lessons.value)
        let converter = RecordConverter(codec: SyncRecordCodec(Self.schema.collections[0]))
        let stored = try server.workouts.value.mapValues { record in
            try JSONCoding.decoder().decode(Workout.self, from: try converter.plain(record).data())
        }
        let deviceRecords = try await device.records(Workout.self)
        #expect(stored.count == 100 && stored == Dictionary(uniqueKeysWithValues: deviceRecords.map { ($0.workoutId, $0) }))
        #expect(stored.mapValues(\.laps) == laps && stored.mapValues { $0.note ?? "" } == notes)
        // Cut by bytes within the limit, not only by count: more requests than 500 items each need.
        let sizes = server.bodySizes.value
        #expect(sizes.allSatisfy { $0 <= 16 * 1024 }, "\(sizes.max() ?? 0)")
        #expect(sizes.count > 2 * ((count / 2 + 499) / 500), "\(sizes.count) requests")
        // A restart reads the same state back.
        let restarted = try SyncClient(client: harness.client, storage: storage, collections: Self.schema)
        #expect(await restarted.snapshot == view)
        #expect(await !restarted.hasPendingChanges)
        return Run(recorded: recorded, synced: (total.writes - recorded.writes, total.bytes - recorded.bytes))
    }

    @Test(
        "10,000 changes recorded offline cost one write each and bytes per change that do not grow with the queue; the server ends with exactly them"
    )
    func linearQueue() async throws {
        let small = try await recordAndSync(2_500)
        let large = try await recordAndSync(10_000)
        let perChange = { (written: (writes: Int, bytes: Int), count: Int) in
            (writes: Double(written.writes) / Double(count), bytes: Double(written.bytes) / Double(count))
        }
        let (smallRecorded, largeRecorded) = (perChange(small.recorded, 2_500), perChange(large.recorded, 10_000))
        let (smallSynced, largeSynced) = (perChange(small.synced, 2_500), perChange(large.synced, 10_000))
        print("per change, recording 2,500 / 10,000: \(smallRecorded) / \(largeRecorded); syncing: \(smallSynced) / \(largeSynced)")
        // One append per change, and a compaction now and then.
        #expect(largeRecorded.writes < 1.1 && smallRecorded.writes < 1.1)
        // Linear: the bytes written per change at four times the count within twice those at the
        // count (a state stored whole at each change writes four times as many).
        #expect(largeRecorded.bytes < 2 * smallRecorded.bytes, "\(largeRecorded.bytes) against \(smallRecorded.bytes)")
        #expect(largeSynced.bytes < 2 * smallSynced.bytes, "\(largeSynced.bytes) against \(smallSynced.bytes)")
    }

    @Test("A restart replays the log; a last entry cut short by a crash, or garbled, is ignored, and the next change starts clean")
    func tornEntry() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-log-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FileStorage(directory: directory)
        let harness = try ClientHarness { _ in .connectionReset }
        func lesson(_ index: Int) -> LessonProgress {
            LessonProgress(beliefSystemID: "b", lessonID: "l\(index)", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil)
        }
        let device = try SyncClient(client: harness.client, storage: storage, collections: Self.schema)
        for index in 0..<20 { try await device.record(lesson(index)) }
        try await device.increment("laps", of: Workout(workoutId: "w1", laps: 0), by: 3)
        let before = await device.snapshot
        let log = directory.appendingPathComponent("sync-state.log")
        let whole = try Data(contentsOf: log)
        // The first change stored the state whole (with the device's id); the others were appended.
        #expect(whole.count > 0 && FileManager.default.fileExists(atPath: directory.appendingPathComponent("sync-state").path))

        // A crash in the middle of the next append: a part of an entry at the end.
        try await device.record(lesson(20))
        let longer = try Data(contentsOf: log)
        for cut in [whole.count + 1, whole.count + 9, longer.count - 1] {
            try longer.prefix(cut).write(to: log)
            let restarted = try SyncClient(client: harness.client, storage: storage, collections: Self.schema)
            #expect(await restarted.snapshot == before, "cut at \(cut) of \(longer.count)")
        }
        // A garbled entry (same length, a byte changed) is as good as torn.
        var garbled = longer
        garbled[longer.count - 5] ^= 0x20
        try garbled.write(to: log)
        let restarted = try SyncClient(client: harness.client, storage: storage, collections: Self.schema)
        #expect(await restarted.snapshot == before)
        #expect(try await restarted.records(Workout.self) == [Workout(workoutId: "w1", laps: 3)])

        // The next change stores the state whole and empties the log, so nothing follows the garbage.
        try await restarted.record(lesson(21))
        #expect(!FileManager.default.fileExists(atPath: log.path))
        try await restarted.record(lesson(22))
        let again = try SyncClient(client: harness.client, storage: storage, collections: Self.schema)
        let lessons = await again.snapshot.lessons.map(\.lessonID)
        #expect(lessons == ((0..<20).map { "l\($0)" } + ["l21", "l22"]).sorted(), "\(lessons)")
        #expect(await again.hasPendingChanges)
    }

    @Test("The device's id is stored with the first change and kept by a restart; a key of 128 characters keeps no log")
    func deviceKept() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-log-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FileStorage(directory: directory)
        let harness = try ClientHarness { _ in .connectionReset }
        let lesson = LessonProgress(beliefSystemID: "b", lessonID: "l1", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil)
        for key in ["sync-state", String(repeating: "k", count: 128)] {
            let device = try SyncClient(client: harness.client, storage: storage, storageKey: key, collections: Self.schema)
            try await device.record(lesson)
            try await device.increment("laps", of: Workout(workoutId: "w1", laps: 0), by: 2)
            let restarted = try SyncClient(client: harness.client, storage: storage, storageKey: key, collections: Self.schema)
            #expect(await restarted.deviceID == device.deviceID, "\(key.count)")
            #expect(try await restarted.records(Workout.self) == [Workout(workoutId: "w1", laps: 2)])
        }
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent(String(repeating: "k", count: 128) + ".log").path))
    }

    @Test("Entries an interrupted compaction left behind (of the generation before) are skipped")
    func staleEntries() async throws {
        let storage = MemoryStorage()
        let harness = try ClientHarness { _ in .connectionReset }
        let device = try SyncClient(client: harness.client, storage: storage)
        // The first change stores the state whole, the second is appended.
        for id in ["l0", "l1"] {
            try await device.record(
                LessonProgress(beliefSystemID: "b", lessonID: id, status: .inProgress, score: 1, earnedXP: 1, completedAt: nil))
        }
        let staleLog = try #require(try storage.read("sync-state.log"))
        // Compacted (reset stores the state whole), then the old log put back as if its deletion was lost.
        try await device.reset()
        try await device.record(
            LessonProgress(beliefSystemID: "b", lessonID: "l2", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil))
        try storage.write(staleLog + (try storage.read("sync-state.log") ?? Data()), for: "sync-state.log")
        let restarted = try SyncClient(client: harness.client, storage: storage)
        #expect(await restarted.snapshot.lessons.map(\.lessonID) == ["l2"])
    }

    /// A `MemoryStorage` whose appends fail, after writing a part of the bytes, while `failing` is set.
    final class FailingStorage: AppendingStorage, @unchecked Sendable {  // `failing` only touched with `lock` held
        let inner = MemoryStorage()
        private let lock = NSLock()
        private var isFailing = false
        var failing: Bool {
            get { lock.withLock { isFailing } }
            set { lock.withLock { isFailing = newValue } }
        }

        func read(_ key: String) throws -> Data? { try inner.read(key) }
        func write(_ data: Data, for key: String) throws {
            guard !failing else { throw SIWAError.storage("disk full") }
            try inner.write(data, for: key)
        }
        func delete(_ key: String) throws { try inner.delete(key) }
        func append(_ data: Data, to key: String) throws {
            guard !failing else {
                try inner.append(data.prefix(data.count / 2), to: key)  // a torn write, as a full disk may leave
                throw SIWAError.storage("disk full")
            }
            try inner.append(data, to: key)
        }
    }

    @Test("A change whose append fails is not recorded: the client keeps what is stored, and the next change stores the state whole")
    func failedAppend() async throws {
        let storage = FailingStorage()
        let harness = try ClientHarness { _ in .connectionReset }
        func lesson(_ index: Int) -> LessonProgress {
            LessonProgress(beliefSystemID: "b", lessonID: "l\(index)", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil)
        }
        let device = try SyncClient(client: harness.client, storage: storage)
        try await device.record(lesson(1))
        storage.failing = true
        await #expect(throws: SIWAError.self) { try await device.record(lesson(2)) }
        #expect(await device.snapshot.lessons.map(\.lessonID) == ["l1"], "the change that was not stored is not in the view")
        storage.failing = false
        try await device.record(lesson(3))
        let restarted = try SyncClient(client: harness.client, storage: storage)
        #expect(await restarted.snapshot.lessons.map(\.lessonID) == ["l1", "l3"])
        #expect(await restarted.snapshot == device.snapshot)
    }

    @Test("Increments on two devices add up on the server and on both devices; an increment that is not a counter's is refused")
    func increments() async throws {
        let server = MergingServer()
        let answers = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            _ = server.handle(request)
            // Each answer carries the server's records, as a pull would.
            let cursor = answers.increment()
            let items = server.workouts.value.values.map { SyncWire.Item(collection: SyncWire.firstDeclared, record: $0) }
            return Answers.json(200, String(decoding: server.wire.write(cursor: "\(cursor)", items: items), as: UTF8.self))
        }
        try await harness.signIn()
        let phone = try SyncClient(client: harness.client, storage: MemoryStorage(), collections: Self.schema)
        let watch = try SyncClient(client: harness.client, storage: MemoryStorage(), collections: Self.schema)
        let run = Workout(workoutId: "w1", laps: 0)
        try await phone.increment("laps", of: run, by: 2)
        try await watch.increment("laps", of: run, by: 5)
        try await phone.increment("laps", of: run)
        try await phone.sync()
        try await watch.sync()
        try await phone.sync()
        #expect(try await phone.records(Workout.self) == [Workout(workoutId: "w1", laps: 8)])
        #expect(try await watch.records(Workout.self) == [Workout(workoutId: "w1", laps: 8)])
        await #expect(throws: SIWAError.self) { try await phone.increment("note", of: run) }
        await #expect(throws: SIWAError.self) { try await phone.increment("laps", of: run, by: 0) }
        await #expect(throws: SIWAError.self) { try await phone.increment("laps", of: run, by: 2_000_000) }
    }
}

extension [UInt8] {
    fileprivate func data() -> Data { Data(self) }
}
