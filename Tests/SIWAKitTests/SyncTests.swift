import Foundation
import SIWATestSupport
import SyncRules
import Testing

@testable import SIWAKit

/// The sync client: its queue survives failures and restarts, it batches, and devices converge.
@Suite(.timeLimit(.minutes(1))) struct SyncTests {
    static let emptyAnswer = #"{"cursor":"41","profile":null,"progress":[],"achievements":[]}"#
    static let lesson = LessonProgress(
        beliefSystemID: "stoicism", lessonID: "l1", status: .completed, score: 90, earnedXP: 40, completedAt: 1_795_000_000_000)

    @Test("Changes made offline stay queued through a failed push and a restart, then go with the next sync")
    func offlineQueue() async throws {
        let online = Locked(false)
        let storage = MemoryStorage()
        let harness = try ClientHarness { request in
            switch request.path {
            case "/auth/apple": return Answers.signIn(1)
            default: return online.value ? Answers.json(200, SyncTests.emptyAnswer) : .connectionReset
            }
        }
        try await harness.signIn()
        let device = try SyncClient(client: harness.client, storage: storage)
        try await device.record(Self.lesson)
        await #expect(throws: SIWAError.self) { try await device.sync() }
        #expect(await device.hasPendingChanges)

        let restarted = try SyncClient(client: harness.client, storage: storage)
        #expect(await restarted.hasPendingChanges)
        #expect(await restarted.snapshot.lessons == [Self.lesson])
        online.update { $0 = true }
        try await restarted.sync()
        #expect(await !restarted.hasPendingChanges)
        let body = try #require(harness.server.receivedRequests.last?.bodyText)
        #expect(
            body.contains(#""beliefSystemId":"stoicism""#) && body.contains(#""status":"completed""#) && body.contains(#""earnedXp":40"#))
        #expect(try SyncState.stored(in: storage).cursor == "41")
    }

    @Test(
        "A sync whose connection broke before the answer is sent once more; a second break leaves the changes queued",
        arguments: [TestHTTPServer.Response.connectionReset, .connectionClosed])
    func replayedAfterBrokenConnection(broken: TestHTTPServer.Response) async throws {
        let breaks = Locked(1)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            let remaining = breaks.update { count in
                count -= 1
                return count
            }
            return remaining >= 0 ? broken : Answers.json(200, SyncTests.emptyAnswer)
        }
        try await harness.signIn()
        let device = try SyncClient(client: harness.client, storage: MemoryStorage())
        try await device.record(Self.lesson)
        try await device.sync()
        #expect(await !device.hasPendingChanges)
        let bodies = harness.server.receivedRequests.filter { $0.path == "/sync" }.map(\.bodyText)
        #expect(bodies.count == 2 && bodies[0] == bodies[1] && bodies[0].contains("l1"), "\(bodies)")

        breaks.update { $0 = 2 }
        try await device.record(
            LessonProgress(beliefSystemID: "zen", lessonID: "l2", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil))
        await #expect(throws: SIWAError.self) { try await device.sync() }
        #expect(await device.hasPendingChanges)
        #expect(harness.count("POST", "/sync") == 4)
    }

    @Test("A long queue goes in batches of 500, each with the cursor of the previous answer")
    func batches() async throws {
        let answers = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            let cursor = answers.increment()
            return Answers.json(200, #"{"cursor":"\#(cursor)","profile":null,"progress":[],"achievements":[]}"#)
        }
        try await harness.signIn()
        let device = try SyncClient(client: harness.client, storage: MemoryStorage())
        for index in 0..<1_200 {
            try await device.record(
                LessonProgress(beliefSystemID: "b", lessonID: "l\(index)", status: .inProgress, score: 1, earnedXP: 1, completedAt: nil))
        }
        try await device.sync()
        let bodies = harness.server.receivedRequests.filter { $0.path == "/sync" }.map(\.bodyText)
        #expect(bodies.map { $0.components(separatedBy: "lessonId").count - 1 } == [500, 500, 200])
        #expect(bodies[0].contains(#""cursor":null"#) || !bodies[0].contains("cursor"))
        #expect(bodies[1].contains(#""cursor":"1""#) && bodies[2].contains(#""cursor":"2""#))
    }

    @Test("run() backs off while the server cannot be reached, syncs once it can, and wakes up for a new change")
    func runLoop() async throws {
        let syncs = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            return syncs.increment() <= 2 ? .connectionReset : Answers.json(200, SyncTests.emptyAnswer)
        }
        try await harness.signIn()
        let device = try SyncClient(client: harness.client, storage: MemoryStorage())
        try await device.record(Self.lesson)
        let running = Task { await device.run(every: 600, initialDelay: 0.05) }
        defer { running.cancel() }
        #expect(await eventually(within: 30) { await !device.hasPendingChanges })
        #expect(syncs.value == 3, "two failures, then the push")
        var later = Self.lesson
        later.score = 99
        try await device.record(later)
        #expect(await eventually(within: 30) { await !device.hasPendingChanges && syncs.value == 4 })
        #expect(harness.server.receivedRequests.last?.bodyText.contains(#""score":99"#) == true)
    }

    @Test("A change the server would refuse is not recorded, so it cannot hold up the queue")
    func invalidChanges() async throws {
        let harness = try ClientHarness { _ in Answers.signIn(1) }
        let device = try SyncClient(client: harness.client, storage: MemoryStorage())
        var spaced = Self.lesson
        spaced.lessonID = "lesson one"
        var negative = Self.lesson
        negative.score = -1
        for lesson in [spaced, negative] {
            await #expect(throws: SIWAError.self) { try await device.record(lesson) }
        }
        await #expect(throws: SIWAError.self) {
            try await device.record(AchievementProgress(achievementID: "", progress: 1, completed: false, completedAt: nil))
        }
        await #expect(throws: SIWAError.self) { try await device.record(profile: SyncProfile(lastActiveDate: "2026-02-30")) }
        #expect(await !device.hasPendingChanges)
        #expect(await device.snapshot == SyncSnapshot())
        try await device.record(Self.lesson)
        #expect(await device.hasPendingChanges)
    }

    @Test("A change made while its push is in flight stays queued")
    func changeDuringPush() {
        var state = SyncState()
        state.record(Self.lesson)
        let batch = state.batch(limit: 500)
        var better = Self.lesson
        better.score = 95
        state.record(better)
        state.apply(SyncAnswer(cursor: "1", profile: nil, lessons: [Self.lesson], achievements: []), to: batch)
        #expect(state.pendingLessons == [better])
        #expect(state.view.lessons == [better])
    }

    @Test("Two devices changing offline in any order converge to the server's merged state", arguments: 0..<100)
    func convergence(seed: UInt64) {
        var random = SplitMix64(state: seed)
        var server = SyncState()  // the server's state, merged by the same rules
        var devices = [SyncState(), SyncState()]
        func sync(_ index: Int) {
            let batch = devices[index].batch(limit: 500)
            if let profile = batch.profile { server.record(profile: profile) }
            for lesson in batch.lessons { server.record(lesson) }
            for achievement in batch.achievements { server.record(achievement) }
            let view = server.view
            devices[index].apply(
                SyncAnswer(cursor: "1", profile: view.profile, lessons: view.lessons, achievements: view.achievements), to: batch)
        }
        for _ in 0..<Int.random(in: 5...40, using: &random) {
            let index = Int.random(in: 0...1, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: devices[index].record(RandomChanges.lesson(&random))
            case 1: devices[index].record(RandomChanges.achievement(&random))
            case 2: devices[index].record(profile: RandomChanges.profile(&random))
            default: sync(index)
            }
        }
        sync(0)
        sync(1)
        sync(0)
        #expect(devices[0].view == server.view)
        #expect(devices[1].view == server.view)
        #expect(!devices[0].hasPending && !devices[1].hasPending)
    }
}

extension SyncState {
    static func stored(in storage: any KeyValueStorage) throws -> SyncState {
        try SyncClient.load(from: storage, key: "sync-state", log: "sync-state.log").state
    }
}
