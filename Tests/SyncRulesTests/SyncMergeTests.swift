import SIWATestSupport
import SyncRules
import Testing

/// The merge rules are a join: commutative, associative, idempotent. Checked on random values and on
/// random sequences applied in shuffled orders with repeats.
@Suite struct SyncMergeTests {
    /// Folds `changes` into a per-key state, as the server does one sync at a time.
    func fold<Item>(_ changes: [Item], key: (Item) -> String, merge: (Item, Item) -> Item) -> [String: Item] {
        var state: [String: Item] = [:]
        for change in changes {
            let key = key(change)
            state[key] = state[key].map { merge($0, change) } ?? change
        }
        return state
    }

    @Test("Lesson progress: random sequences in shuffled orders, with repeats, reach the same state", arguments: 0..<200)
    func lessons(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let changes = (0..<Int.random(in: 1...12, using: &random)).map { _ in RandomChanges.lesson(&random) }
        let key: (LessonProgress) -> String = { $0.beliefSystemID + "/" + $0.lessonID }
        let expected = fold(changes, key: key) { $0.merged(with: $1) }
        let reordered = (changes + changes.prefix(3)).shuffled(using: &random)
        #expect(fold(reordered, key: key) { $0.merged(with: $1) } == expected)
        for state in expected.values {
            let contributing = changes.filter { key($0) == key(state) }
            #expect(state.status == contributing.map(\.status).max(), "status never goes back")
            #expect(state.score == contributing.map(\.score).max())
            #expect(state.completedAt == contributing.compactMap(\.completedAt).min(), "the earliest completion")
        }
    }

    @Test("Achievements: random sequences in shuffled orders, with repeats, reach the same state", arguments: 0..<200)
    func achievements(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let changes = (0..<Int.random(in: 1...12, using: &random)).map { _ in RandomChanges.achievement(&random) }
        let expected = fold(changes, key: \.achievementID) { $0.merged(with: $1) }
        #expect(fold((changes + changes.suffix(2)).shuffled(using: &random), key: \.achievementID) { $0.merged(with: $1) } == expected)
        for state in expected.values {
            let contributing = changes.filter { $0.achievementID == state.achievementID }
            #expect(state.completed == contributing.contains { $0.completed }, "completed stays completed")
            #expect(state.progress == contributing.map(\.progress).max())
        }
    }

    @Test("Profile: commutative, associative, idempotent; the streak comes with the latest active date", arguments: 0..<300)
    func profile(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let a = RandomChanges.profile(&random)
        let b = RandomChanges.profile(&random)
        let c = RandomChanges.profile(&random)
        Self.expectJoinLaws(a, b, c) { $0.merged(with: $1) }
        let merged = a.merged(with: b)
        #expect(merged.totalXP == max(a.totalXP, b.totalXP) && merged.currentLevel == max(a.currentLevel, b.currentLevel))
        if let dateA = a.lastActiveDate, let dateB = b.lastActiveDate, dateA != dateB {
            #expect(merged.streakDays == (dateA > dateB ? a.streakDays : b.streakDays))
        }
    }

    @Test("Lessons and achievements: commutative, associative, idempotent on random triples", arguments: 0..<300)
    func joinLaws(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let a = RandomChanges.lesson(&random)
        var b = RandomChanges.lesson(&random)
        var c = RandomChanges.lesson(&random)
        (b.beliefSystemID, b.lessonID, c.beliefSystemID, c.lessonID) = (a.beliefSystemID, a.lessonID, a.beliefSystemID, a.lessonID)
        Self.expectJoinLaws(a, b, c) { $0.merged(with: $1) }
        let x = RandomChanges.achievement(&random)
        var y = RandomChanges.achievement(&random)
        var z = RandomChanges.achievement(&random)
        (y.achievementID, z.achievementID) = (x.achievementID, x.achievementID)
        Self.expectJoinLaws(x, y, z) { $0.merged(with: $1) }
    }

    /// The laws of a join on three values: commutative, associative, idempotent.
    static func expectJoinLaws<Value: Equatable>(
        _ a: Value, _ b: Value, _ c: Value, sourceLocation: SourceLocation = #_sourceLocation, merge: (Value, Value) -> Value
    ) {
        #expect(merge(a, b) == merge(b, a), "commutative", sourceLocation: sourceLocation)
        #expect(merge(merge(a, b), c) == merge(a, merge(b, c)), "associative", sourceLocation: sourceLocation)
        #expect(merge(a, a) == a, "idempotent", sourceLocation: sourceLocation)
    }
}
