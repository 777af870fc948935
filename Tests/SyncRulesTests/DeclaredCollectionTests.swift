import SIWATestSupport
import StrictJSON
import SyncRules
import Testing

/// Declared collections: every rule is a join; random schedules of updates, deletes and
/// redeliveries from several devices converge; the built-in model merges exactly as its declaration.
@Suite struct DeclaredCollectionTests {
    /// A collection with every rule, deletable.
    static let workouts = try! SyncSchema(declaration: Array(Self.declaration.utf8)).collections[0]
    static let declaration = """
        {"collections": {"workouts": {
            "key": ["day", "kind"],
            "fields": {
                "day": {"type": "date"}, "kind": {"type": "id"},
                "note": {"type": "string", "maxLength": 20, "merge": "latestWins"},
                "distance": {"type": "integer", "min": 0, "max": 100000, "merge": "maximum"},
                "pace": {"type": "integer", "min": 0, "max": 1000, "merge": "minimum"},
                "started": {"type": "time", "merge": "earliest"},
                "ended": {"type": "time", "merge": "latest"},
                "level": {"type": "enum", "values": ["easy", "steady", "hard"], "merge": "forward"},
                "tags": {"type": "set", "maxCount": 5, "maxLength": 8, "merge": "union"},
                "laps": {"type": "integer", "min": 0, "max": 1000, "merge": "counter"},
                "shared": {"type": "boolean", "merge": "stickyTrue"},
                "best": {"type": "integer", "min": 0, "max": 100, "merge": "withLatest", "of": "ended"}},
            "deletion": {"tombstoneDays": 7},
            "limits": {"itemsPerRequest": 50, "itemsPerUser": 1000}}}}
        """
    static let devices = ["phone", "tablet", "watch"]

    /// A random value of `field`, from a small space so that ties are frequent.
    static func value(of field: SyncField, _ random: inout SplitMix64) -> SyncValue {
        if Int.random(in: 0..<5, using: &random) == 0 { return field.emptyValue }
        let device = devices.randomElement(using: &random)!
        switch field.rule {
        case .latestWins:
            let inner: SyncValue = Bool.random(using: &random) ? .string("n\(Int.random(in: 0..<3, using: &random))") : .none
            return .stamped(inner, SyncStamp(at: Int64.random(in: 1...4, using: &random), device: device))
        case .counter:
            return .counts(
                devices.filter { _ in Bool.random(using: &random) }.map {
                    SyncCount(device: $0, count: Int64.random(in: 0...3, using: &random))
                })
        case .union:
            return .strings(
                Array(Set((0..<Int.random(in: 0...3, using: &random)).map { _ in "t\(Int.random(in: 0..<4, using: &random))" })).sorted())
        case .stickyTrue: return .boolean(Bool.random(using: &random))
        case .forward: return .string(["easy", "steady", "hard"].randomElement(using: &random)!)
        default: return .integer(Int64.random(in: 0...4, using: &random))
        }
    }

    /// A random change of one of a few records: an update, or (one time in four) a delete.
    static func change(_ random: inout SplitMix64) -> SyncRecord {
        let keyValues: [SyncValue] = [.string("2026-11-0\(Int.random(in: 1...2, using: &random))"), .string("run")]
        var record = SyncRecord(
            keyValues: keyValues, key: SyncRecordCodec.key(keyValues), values: workouts.fields.map { value(of: $0, &random) },
            deleted: .none)
        let stamp = SyncStamp(at: Int64.random(in: 1...6, using: &random), device: devices.randomElement(using: &random)!)
        record.deleted = .stamped(.boolean(Int.random(in: 0..<4, using: &random) == 0), stamp)
        return record
    }

    @Test("Every rule is commutative, associative and idempotent on random values", arguments: 0..<200)
    func joinLaws(seed: UInt64) {
        var random = SplitMix64(state: seed)
        for field in Self.workouts.fields {
            let (a, b, c) = (Self.value(of: field, &random), Self.value(of: field, &random), Self.value(of: field, &random))
            let order: [String] = if case .enumeration(let cases) = field.type { cases } else { [] }
            SyncMergeTests.expectJoinLaws(a, b, c) { SyncValue.merged($0, $1, by: field.rule!, order: order) }
        }
        let records = (0..<3).map { _ in Self.change(&random) }.map { record -> SyncRecord in
            var record = record
            (record.keyValues, record.key) = (Self.sameKey, SyncRecordCodec.key(Self.sameKey))
            return record
        }
        SyncMergeTests.expectJoinLaws(records[0], records[1], records[2]) { Self.workouts.merged($0, $1) }
    }

    static let sameKey: [SyncValue] = [.string("2026-11-01"), .string("run")]

    /// Folds changes into a state by key.
    static func fold(_ changes: [SyncRecord], into state: [String: SyncRecord] = [:]) -> [String: SyncRecord] {
        var state = state
        for change in changes { state[change.key] = state[change.key].map { workouts.merged($0, change) } ?? change }
        return state
    }

    @Test(
        "Random schedules of updates, deletes and redeliveries from three devices, in any order, converge on the server and every device",
        arguments: 0..<200)
    func convergence(seed: UInt64) {
        var random = SplitMix64(state: seed)
        // Each device makes changes offline, merging them into its own view as it goes.
        var views: [[String: SyncRecord]] = Self.devices.map { _ in [:] }
        var sent: [SyncRecord] = []
        for _ in 0..<Int.random(in: 1...20, using: &random) {
            let device = Int.random(in: 0..<Self.devices.count, using: &random)
            let change = Self.change(&random)
            views[device] = Self.fold([change], into: views[device])
            sent.append(change)
        }
        // The server gets every change, some twice, in a random order.
        let deliveries = (sent + sent.filter { _ in Bool.random(using: &random) }).shuffled(using: &random)
        let server = Self.fold(deliveries)
        #expect(server == Self.fold(sent), "the order and repeats of deliveries do not matter")
        // Each device merges the server's state into its own, and ends with the server's.
        for device in views.indices {
            let merged = Self.fold(Array(server.values).shuffled(using: &random), into: views[device])
            #expect(merged == server)
        }
        // A record whose latest change (by stamp) is a delete is deleted everywhere; else it is not.
        for (key, record) in server {
            let latest = sent.filter { $0.key == key }.max { SyncValue.precedes($0.deleted, $1.deleted) }!
            #expect(record.isDeleted == latest.isDeleted)
        }
    }

    // MARK: - The built-in model

    static let builtIn = SyncSchema.builtIn.collections

    static func record(_ lesson: LessonProgress) -> SyncRecord {
        let keys: [SyncValue] = [.string(lesson.beliefSystemID), .string(lesson.lessonID)]
        return SyncRecord(
            keyValues: keys, key: SyncRecordCodec.key(keys),
            values: [
                .string(lesson.status.name), .integer(lesson.score), .integer(lesson.earnedXP),
                lesson.completedAt.map { .integer($0) } ?? .none,
            ],
            deleted: .none)
    }

    static func record(_ achievement: AchievementProgress) -> SyncRecord {
        let keys: [SyncValue] = [.string(achievement.achievementID)]
        return SyncRecord(
            keyValues: keys, key: SyncRecordCodec.key(keys),
            values: [
                .integer(achievement.progress), .boolean(achievement.completed), achievement.completedAt.map { .integer($0) } ?? .none,
            ],
            deleted: .none)
    }

    static func record(_ profile: SyncProfile) -> SyncRecord {
        SyncRecord(
            keyValues: [], key: "[]",
            values: [
                .integer(profile.totalXP), .integer(profile.currentLevel), .integer(profile.streakDays),
                profile.lastActiveDate.map { .string($0) } ?? .none,
            ],
            deleted: .none)
    }

    @Test("Lessons, achievements and the profile merge exactly as their built-in declarations do", arguments: 0..<300)
    func builtInDeclarations(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let a = RandomChanges.lesson(&random)
        var b = RandomChanges.lesson(&random)
        (b.beliefSystemID, b.lessonID) = (a.beliefSystemID, a.lessonID)
        #expect(Self.record(a.merged(with: b)) == Self.builtIn[0].merged(Self.record(a), Self.record(b)))
        let x = RandomChanges.achievement(&random)
        var y = RandomChanges.achievement(&random)
        y.achievementID = x.achievementID
        #expect(Self.record(x.merged(with: y)) == Self.builtIn[1].merged(Self.record(x), Self.record(y)))
        let p = RandomChanges.profile(&random)
        let q = RandomChanges.profile(&random)
        #expect(Self.record(p.merged(with: q)) == Self.builtIn[2].merged(Self.record(p), Self.record(q)))
    }

    // MARK: - Records as JSON

    static let codec = SyncRecordCodec(workouts)

    static func read(_ json: String) throws -> Result<SyncRecord, SyncRecordCodec.Problem> {
        var reader = JSONReader(Array(json.utf8))
        let result = try codec.read(&reader, path: "collections.workouts[0]")
        try reader.end()
        return result
    }

    @Test("A record is written and read back as the same record, in every shape of value")
    func roundTrip() throws {
        var random = SplitMix64(state: 7)
        for _ in 0..<200 {
            let record = Self.change(&random)
            let text = String(decoding: Self.codec.json(record), as: UTF8.self)
            #expect(try Self.read(text).get() == record, "\(text)")
        }
    }

    @Test("A record that breaks its declaration is refused naming the member's path")
    func problems() throws {
        let cases: [(String, String)] = [
            (#"{"kind":"run"}"#, "`collections.workouts[0].day` is required"),
            (#"{"day":"2026-11-31","kind":"run"}"#, "`collections.workouts[0].day` must be a date YYYY-MM-DD"),
            (
                #"{"day":"2026-11-01","kind":"run","distance":100001}"#,
                "`collections.workouts[0].distance` must be an integer from 0 to 100000"
            ),
            (
                #"{"day":"2026-11-01","kind":"run","note":"plain"}"#,
                #"`collections.workouts[0].note` must be {"value": …, "at": Unix milliseconds, "device": an id}"#
            ),
            (
                #"{"day":"2026-11-01","kind":"run","note":{"value":"123456789012345678901","at":1,"device":"d"}}"#,
                "`collections.workouts[0].note.value` must be at most 20 bytes of UTF-8"
            ),
            (#"{"day":"2026-11-01","kind":"run","level":"extreme"}"#, "`collections.workouts[0].level` must be easy, steady or hard"),
            (
                #"{"day":"2026-11-01","kind":"run","tags":["a","b","c","d","e","f"]}"#,
                "`collections.workouts[0].tags` must hold at most 5 strings"
            ),
            (
                #"{"day":"2026-11-01","kind":"run","laps":{"phone":1001}}"#,
                "`collections.workouts[0].laps.phone` must be an integer from 0 to 1000"
            ),
            (#"{"day":"2026-11-01","kind":"run","shared":1}"#, "`collections.workouts[0].shared` has the wrong type (boolean)"),
            (
                #"{"day":"2026-11-01","kind":"run","deleted":true}"#,
                #"`collections.workouts[0].deleted` must be {"value": …, "at": Unix milliseconds, "device": an id}"#
            ),
            (#"[1]"#, "`collections.workouts[0]` must be an object"),
        ]
        for (json, message) in cases {
            switch try Self.read(json) {
            case .success(let record): Issue.record("accepted \(json) as \(record)")
            case .failure(let problem): #expect(problem.message == message, "\(json)")
            }
        }
        // Members it does not declare are ignored; absent fields have no value.
        let record = try Self.read(#"{"day":"2026-11-01","kind":"run","future":{"x":1},"distance":null}"#).get()
        #expect(Array(record.values.prefix(Self.workouts.fields.count)) == Self.workouts.fields.map(\.emptyValue))
    }

    // MARK: - Declarations

    static func problems(_ declaration: String) -> [String] {
        do {
            _ = try SyncSchema(declaration: Array(declaration.utf8))
            return []
        } catch { return error.problems }
    }

    @Test(
        "A declaration with an unknown rule, a missing key field, a limit out of range or a misplaced member is refused, every problem named"
    )
    func declarationProblems() {
        #expect(Self.workouts.fields.count == 10 && Self.workouts.keys.map(\.name) == ["day", "kind"])
        #expect(Self.workouts.limits == .init(itemsPerRequest: 50, itemsPerUser: 1000) && Self.workouts.tombstoneDays == 7)
        let problems = Self.problems(
            """
            {"collections": {
                "notes": {"key": ["noteId"], "fields": {"text": {"type": "string", "merge": "newest"}},
                          "limits": {"itemsPerRequest": 501, "itemsPerUser": 0}, "deletion": {"tombstoneDays": 0}},
                "progress": {"key": [], "fields": {}},
                "flags": {"key": [], "fields": {"on": {"type": "boolean", "merge": "maximum"}, "deleted": {"type": "boolean", "merge": "stickyTrue"}},
                          "limit": {}},
                "streaks": {"key": [], "fields": {"days": {"type": "integer", "merge": "withLatest", "of": "nothing"},
                                                  "at": {"type": "clock", "merge": "latest"}}}
            }}
            """)
        #expect(
            problems == [
                #"collections.notes.key: names "noteId", which is not one of its fields"#,
                #"collections.notes.fields.text.merge: "newest" is not a merge rule (one of maximum, minimum, earliest, latest, forward, union, latestWins, counter, stickyTrue, withLatest)"#,
                "collections.notes.deletion.tombstoneDays: must be an integer from 1 to 3650",
                "collections.notes.limits.itemsPerRequest: must be an integer from 1 to 500",
                "collections.notes.limits.itemsPerUser: must be an integer from 1 to 1000000",
                "collections.progress: is a name the built-in sync uses; choose another",
                "collections.flags.limit: is not a member here (expected one of deletion, fields, key, limits)",
                "collections.flags.fields.deleted: is the member that marks a record deleted; choose another name",
                "collections.flags.fields.on.merge: maximum does not apply to a field of type boolean (latestWins, stickyTrue do)",
                "collections.streaks.fields.days.of: must name another field of the collection whose rule is latest, maximum or latestWins",
                "collections.streaks.fields.at.type: \"clock\" is not a type (one of integer, string, id, boolean, time, date, enum, set)",
            ], "\(problems)")
        #expect(Self.problems("[]").count == 1 && Self.problems("[]")[0].hasPrefix("the file is not a JSON object"))
        #expect(Self.problems("{}") == ["collections: is required"])
    }

    @Test("A counter's max bounds the sum of the counts a request sends; a counter counts at most 64 devices, as sent and merged")
    func counterBounds() throws {
        let over = try Self.read(#"{"day":"2026-11-01","kind":"run","laps":{"phone":600,"tablet":600}}"#)
        #expect(over.failure?.message == "`collections.workouts[0].laps` counts 1200 in all, more than its max 1000")
        let devices = (0...64).map { #""d\#($0)":1"# }.joined(separator: ",")
        let many = try Self.read(#"{"day":"2026-11-01","kind":"run","laps":{\#(devices)}}"#)
        #expect(many.failure?.message == "`collections.workouts[0].laps` counts more than 64 devices")
        // Two devices each within the max may add up past it; 64 devices and one more, merged, may not.
        let phone = try Self.read(#"{"day":"2026-11-01","kind":"run","laps":{"phone":600}}"#).get()
        let tablet = try Self.read(#"{"day":"2026-11-01","kind":"run","laps":{"tablet":600}}"#).get()
        #expect(Self.workouts.counterProblem(in: Self.workouts.merged(phone, tablet), comparedTo: phone) == nil)
        let sixtyFour = (0..<64).map { #""d\#($0)":1"# }.joined(separator: ",")
        let full = try Self.read(#"{"day":"2026-11-01","kind":"run","laps":{\#(sixtyFour)}}"#).get()
        let merged = Self.workouts.merged(full, tablet)
        #expect(Self.workouts.counterProblem(in: full, comparedTo: nil) == nil)
        let problem = Self.workouts.counterProblem(in: merged, comparedTo: full)
        #expect(problem?.field == "laps" && problem?.problem == "would count 65 devices, more than 64")
        #expect(Self.workouts.counterProblem(in: merged, comparedTo: merged) == nil, "a record already over the bound may stay so")
    }

    @Test("Byte limits are declared per record and for all collections (per user, per guest, per request), with defaults and ranges")
    func byteLimits() {
        #expect(Self.workouts.limits.bytesPerRecord == 16_384)
        let defaults = try! SyncSchema(declaration: Array(Self.declaration.utf8)).limits
        #expect(defaults == .init(bytesPerUser: 67_108_864, guestBytesPerUser: 4_194_304, bytesPerRequest: 1_048_576))
        let declared = try! SyncSchema(
            declaration: Array(
                #"{"limits": {"bytesPerUser": 100000, "guestBytesPerUser": 5000, "bytesPerRequest": 20000}, "collections": {"n": {"key": ["id"], "fields": {"id": {"type": "id"}}, "limits": {"bytesPerRecord": 300}}}}"#
                    .utf8))
        #expect(declared.limits == .init(bytesPerUser: 100_000, guestBytesPerUser: 5_000, bytesPerRequest: 20_000))
        #expect(declared.collections[0].limits.bytesPerRecord == 300)
        #expect(
            Self.problems(
                #"{"limits": {"bytesPerUser": 2000, "guestBytesPerUser": 3000, "bytesPerRequest": 10}, "collections": {"n": {"key": ["id"], "fields": {"id": {"type": "id"}}, "limits": {"bytesPerRecord": 100}}}}"#
            ) == [
                "limits.guestBytesPerUser: must be an integer from 1024 to 2000",
                "limits.bytesPerRequest: must be an integer from 1024 to 1048576",
                "collections.n.limits.bytesPerRecord: must be an integer from 256 to 1048576",
            ])
    }
}

extension Result {
    /// The error, or nil for a success.
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
