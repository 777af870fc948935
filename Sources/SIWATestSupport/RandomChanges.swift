package import SyncRules

/// A seeded generator, so a failing case can be replayed.
package struct SplitMix64: RandomNumberGenerator {
    package var state: UInt64

    package init(state: UInt64) { self.state = state }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Random changes, from a small space so that collisions (same lesson, same day) are frequent.
package enum RandomChanges {
    package static func lesson(_ random: inout SplitMix64) -> LessonProgress {
        LessonProgress(
            beliefSystemID: "bs\(Int.random(in: 0..<2, using: &random))", lessonID: "l\(Int.random(in: 0..<3, using: &random))",
            status: LessonStatus.allCases.randomElement(using: &random)!, score: Int64.random(in: 0...5, using: &random),
            earnedXP: Int64.random(in: 0...5, using: &random),
            completedAt: Bool.random(using: &random) ? nil : Int64.random(in: 1000...1005, using: &random))
    }

    package static func achievement(_ random: inout SplitMix64) -> AchievementProgress {
        AchievementProgress(
            achievementID: "a\(Int.random(in: 0..<3, using: &random))", progress: Int64.random(in: 0...5, using: &random),
            completed: Bool.random(using: &random),
            completedAt: Bool.random(using: &random) ? nil : Int64.random(in: 1000...1005, using: &random))
    }

    package static func profile(_ random: inout SplitMix64) -> SyncProfile {
        SyncProfile(
            totalXP: Int64.random(in: 0...5, using: &random), currentLevel: Int64.random(in: 0...5, using: &random),
            streakDays: Int64.random(in: 0...5, using: &random),
            lastActiveDate: Bool.random(using: &random) ? nil : "2026-11-0\(Int.random(in: 1...3, using: &random))")
    }
}
