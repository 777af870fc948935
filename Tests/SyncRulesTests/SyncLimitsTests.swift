import AccountData
import SyncRules
import Testing

/// The limits the server and the app share: ids, dates, ranges.
@Suite struct SyncLimitsTests {
    @Test("Identifiers: 1 to 128 characters of A-Z a-z 0-9 . _ : -")
    func identifiers() {
        for good in ["a", "stoicism", "l1.2_3:x-y", String(repeating: "z", count: 128)] {
            #expect(SyncLimits.isIdentifier(good), "\(good)")
        }
        for bad in ["", "a b", "é", "a/b", String(repeating: "z", count: 129)] { #expect(!SyncLimits.isIdentifier(bad), "\(bad)") }
    }

    @Test("Dates: real calendar days from 2000 to 2099")
    func dates() {
        for good in ["2000-01-01", "2024-02-29", "2099-12-31"] { #expect(SyncLimits.isDate(good), "\(good)") }
        for bad in ["1999-12-31", "2100-01-01", "2023-02-29", "2026-13-01", "2026-1-01", "2026-01-01T", ""] {
            #expect(!SyncLimits.isDate(bad), "\(bad)")
        }
    }

    @Test("Items: each problem named; a valid item has none")
    func items() {
        let lesson = LessonProgress(beliefSystemID: "b", lessonID: "l", status: .completed, score: 1, earnedXP: 1, completedAt: 1)
        #expect(SyncLimits.problem(in: lesson) == nil)
        var late = lesson
        late.completedAt = SyncLimits.latestTime + 1
        #expect(SyncLimits.problem(in: late)?.hasPrefix("completedAt") == true)
        #expect(SyncLimits.problem(in: SyncProfile(totalXP: SyncLimits.maximumTotalXP + 1))?.hasPrefix("totalXp") == true)
        #expect(SyncLimits.problem(in: AchievementProgress(achievementID: "a", progress: -1, completed: false, completedAt: nil)) != nil)
    }
}
