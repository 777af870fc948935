import Foundation
import SIWATestSupport
import SyncRules
import Testing

@testable import SIWAKit

/// Records of declared collections on a device: the app's structs saved, deleted and read back,
/// stamped and counted as the server merges them, sent in batches, and the server's answers
/// merged, paged and, on a resync, taken as the whole state.
@Suite(.timeLimit(.minutes(1))) struct SyncRecordsTests {
    struct Workout: SyncedRecord, Equatable {
        static let collection = "workouts"
        var workoutId: String
        var note: String?
        var distance: Int64?
        var laps: Int64
        var tags: Set<String>
    }

    struct Undeclared: SyncedRecord {
        static let collection = "nothing"
        var id: String
    }

    static let schema = try! SyncSchema(
        declaration: Array(
            #"""
            {"collections": {"workouts": {"key": ["workoutId"], "deletion": {"tombstoneDays": 30},
              "limits": {"itemsPerRequest": 2},
              "fields": {"workoutId": {"type": "id"}, "note": {"type": "string", "maxLength": 10, "merge": "latestWins"},
                         "distance": {"type": "integer", "max": 100000, "merge": "maximum"},
                         "laps": {"type": "integer", "max": 1000, "merge": "counter"},
                         "tags": {"type": "set", "merge": "union"}}}}}
            """#.utf8))

    static func device(_ harness: ClientHarness) throws -> SyncClient {
        try SyncClient(client: harness.client, storage: MemoryStorage(), collections: schema)
    }

    @Test("Saved records read back merged; a counter grows by what this device added; a deleted record is left out")
    func saveAndRead() async throws {
        let harness = try ClientHarness { _ in Answers.signIn(1) }
        let device = try Self.device(harness)
        try await device.save(Workout(workoutId: "w1", note: "easy", distance: 5000, laps: 3, tags: ["run"]))
        try await device.save(Workout(workoutId: "w1", note: "easy", distance: 4000, laps: 5, tags: ["tempo"]))
        try await device.save(Workout(workoutId: "w1", note: "easy", distance: 4000, laps: 2, tags: []))
        #expect(
            try await device.records(Workout.self) == [
                Workout(workoutId: "w1", note: "easy", distance: 5000, laps: 5, tags: ["run", "tempo"])
            ])
        try await device.save(Workout(workoutId: "w2", laps: 0, tags: []))
        try await device.delete(Workout(workoutId: "w1", laps: 0, tags: []))
        #expect(try await device.records(Workout.self).map(\.workoutId) == ["w2"])
        try await device.save(Workout(workoutId: "w1", note: "back", laps: 0, tags: []))
        #expect(try await device.records(Workout.self).first?.note == "back", "a save after a deletion restores the record")
        await #expect(throws: SIWAError.self) { try await device.save(Workout(workoutId: "w3", note: "far too long", laps: 0, tags: [])) }
        await #expect(throws: SIWAError.self) { try await device.save(Undeclared(id: "x")) }
        #expect(try await device.records(Workout.self).count == 2, "a refused change records nothing")
    }

    @Test("A save that changes nothing keeps the record's deletion stamp; one that changes a field stamps it anew")
    func noOpSave() async throws {
        let harness = try ClientHarness { _ in Answers.signIn(1) }
        let device = try Self.device(harness)
        let workout = Workout(workoutId: "w1", note: "easy", distance: 5, laps: 0, tags: [])
        try await device.save(workout)
        let first = try #require(await device.stateForTests.records["workouts"]?["w1"])
        try await Task.sleep(nanoseconds: 5_000_000)
        try await device.save(workout)
        #expect(await device.stateForTests.records["workouts"]?["w1"] == first, "nothing moved, not even the deletion stamp")
        try await device.save(Workout(workoutId: "w1", note: "easy", distance: 6, laps: 0, tags: []))
        #expect(await device.stateForTests.records["workouts"]?["w1"] != first)
    }

    @Test("Queued records of a collection this client was not given stay queued and do not make sync() loop")
    func recordsOfAnotherClient() async throws {
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            return Answers.json(200, SyncTests.emptyAnswer)
        }
        try await harness.signIn()
        let storage = MemoryStorage()
        let declared = try SyncClient(client: harness.client, storage: storage, collections: Self.schema)
        try await declared.save(Workout(workoutId: "w1", laps: 0, tags: []))
        let builtInOnly = try SyncClient(client: harness.client, storage: storage)
        try await builtInOnly.sync()
        #expect(harness.count("POST", "/sync") == 1)
        #expect(await builtInOnly.hasPendingChanges, "the workout waits for a client given its collection")
    }

    @Test("Records go at most a collection's itemsPerRequest per request, stamped by this device; the answers' records merge into the view")
    func sync() async throws {
        let answers = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            let page = answers.increment()
            let record =
                #"{"workoutId":"w9","note":{"value":"other","at":5,"device":"tablet"},"distance":7,"laps":{"tablet":4},"tags":["trail"],"deleted":null}"#
            return Answers.json(
                200,
                #"{"cursor":"\#(page)","profile":null,"progress":[],"achievements":[],"collections":{"workouts":[\#(page == 1 ? record : "")]}}"#
            )
        }
        try await harness.signIn()
        let device = try Self.device(harness)
        for index in 0..<3 { try await device.save(Workout(workoutId: "w\(index)", note: "n\(index)", laps: 1, tags: [])) }
        try await device.sync()
        let bodies = harness.server.receivedRequests.filter { $0.path == "/sync" }.map(\.bodyText)
        #expect(bodies.map { $0.components(separatedBy: "workoutId").count - 1 } == [2, 1])
        let deviceID = await device.deviceID
        #expect(bodies[0].contains(#""laps":{"\#(deviceID)":1}"#) && bodies[0].contains(#""device":"\#(deviceID)""#), "\(bodies[0])")
        #expect(await !device.hasPendingChanges)
        let w9 = try await device.records(Workout.self).first { $0.workoutId == "w9" }
        #expect(w9 == Workout(workoutId: "w9", note: "other", distance: 7, laps: 4, tags: ["trail"]))
    }

    @Test("An answer with more is followed at once by the next page; a resync answer replaces the view, keeping what is not sent yet")
    func pagesAndResync() async throws {
        let answers = Locked(0)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            let record = { (id: String) in #"{"workoutId":"\#(id)","note":null,"distance":1,"laps":{},"tags":[],"deleted":null}"# }
            switch answers.increment() {
            case 1:
                return Answers.json(
                    200,
                    #"{"cursor":"1.0.2.61","profile":null,"progress":[],"achievements":[],"collections":{"workouts":[\#(record("a"))]},"more":true}"#
                )
            case 2:
                return Answers.json(
                    200, #"{"cursor":"2","profile":null,"progress":[],"achievements":[],"collections":{"workouts":[\#(record("b"))]}}"#)
            default:
                return Answers.json(
                    200,
                    #"{"cursor":"9","profile":null,"progress":[],"achievements":[],"collections":{"workouts":[\#(record("c"))]},"resync":true}"#
                )
            }
        }
        try await harness.signIn()
        let device = try Self.device(harness)
        try await device.sync()
        #expect(try await device.records(Workout.self).map(\.workoutId) == ["a", "b"])
        let requests = harness.server.receivedRequests.filter { $0.path == "/sync" }.map(\.bodyText)
        #expect(requests.count == 2 && requests[1].contains(#""cursor":"1.0.2.61""#))
        try await device.sync()
        #expect(try await device.records(Workout.self).map(\.workoutId) == ["c"], "a and b were dropped by the resync")
    }

    @Test("A batch the server refuses for good is set aside: the rest is sent, the view keeps it, and it goes again once requeued")
    func refusedBatchSetAside() async throws {
        let refusing = Locked(true)
        let harness = try ClientHarness { request in
            guard request.path == "/sync" else { return Answers.signIn(1) }
            if request.bodyText.contains("a-big") && refusing.value {
                return Answers.json(
                    400, #"{"error":"invalid_request","message":"`collections` would store 4195130 bytes of records for this user"}"#)
            }
            return Answers.json(200, SyncTests.emptyAnswer)
        }
        try await harness.signIn()
        let device = try Self.device(harness)
        // Two per request (the declaration's itemsPerRequest), in key order: the first batch, a-big and
        // w-a, is refused as a whole and set aside; w-b goes on.
        for id in ["a-big", "w-a", "w-b"] { try await device.save(Workout(workoutId: id, laps: 1, tags: [])) }
        await #expect(
            throws: SIWAError.server(
                .init(status: 400, code: .invalidRequest, message: "`collections` would store 4195130 bytes of records for this user"))
        ) {
            try await device.sync()
        }
        let bodies = harness.server.receivedRequests.filter { $0.path == "/sync" }.map(\.bodyText)
        #expect(bodies.count == 2 && bodies[1].contains("w-b") && !bodies[1].contains("a-big"), "the rest was sent after the refusal")
        #expect(await !device.hasPendingChanges)
        #expect(await device.hasRefusedChanges)
        #expect(try await device.records(Workout.self).map(\.workoutId).sorted() == ["a-big", "w-a", "w-b"], "the view keeps it")
        try await device.sync()
        #expect(!(harness.server.receivedRequests.last?.bodyText.contains("a-big") ?? true), "not sent again by itself")
        // What refused it changed (a guest signed in with Apple): queued again, sent, accepted.
        refusing.update { $0 = false }
        try await device.requeueRefusedChanges()
        #expect(await device.hasPendingChanges)
        #expect(await !device.hasRefusedChanges)
        try await device.sync()
        #expect(harness.server.receivedRequests.last?.bodyText.contains("a-big") == true)
        #expect(await !device.hasPendingChanges)
        #expect(await !device.hasRefusedChanges)
    }
}
