import AccountData
import Accounts
import FastCGI
import Identity
import SIWATestSupport
import Server
import SyncRules
import Testing

/// Reading a sync's body: every member lands in its field, and each invalid one gets a 400 naming
/// its path.
@Suite struct SyncRoutesTests {
    func changes(_ body: String) throws -> SyncChanges {
        try SyncRoutes.changes(in: Request(method: "POST", path: "/sync", body: Array(body.utf8)))
    }

    /// The message of the 400 a body gets.
    func refusal(_ body: String) -> String? {
        do {
            _ = try changes(body)
            return nil
        } catch let error as HTTPError {
            return error.status == 400 ? error.publicMessage : "status \(error.status)"
        } catch {
            return "\(error)"
        }
    }

    @Test("Every member is read, in any order, escaped names included; unknown members are skipped")
    func reads() throws {
        let read = try changes(
            #"""
            { "extra": {"nested": [1, {"x": null}]},
              "achievements": [{"achievementId": "a1", "progress": 3, "completed": true, "completedAt": 1700000000000, "note": "x"}],
              "progress": [
                {"lessonId": "l1", "beliefSystemId": "bs", "status": "completed", "score": 7, "earnedXp": 9, "completedAt": 1700000000001},
                {"beliefSystemId": "bs", "lesson\u0049d": "l2", "status": "not_started", "score": null}],
              "profile": {"totalXp": 12, "currentLevel": 2, "streakDays": 3, "lastActiveDate": "2026-02-28"},
              "cursor": "41" }
            """#)
        #expect(read.cursor == SyncCursor(version: 41))
        #expect(read.profile == SyncProfile(totalXP: 12, currentLevel: 2, streakDays: 3, lastActiveDate: "2026-02-28"))
        #expect(
            read.progress == [
                LessonProgress(
                    beliefSystemID: "bs", lessonID: "l1", status: .completed, score: 7, earnedXP: 9, completedAt: 1_700_000_000_001),
                LessonProgress(beliefSystemID: "bs", lessonID: "l2", status: .notStarted, score: 0, earnedXP: 0, completedAt: nil),
            ])
        #expect(
            read.achievements == [AchievementProgress(achievementID: "a1", progress: 3, completed: true, completedAt: 1_700_000_000_000)])
        let empty = try changes(#"{"cursor": null, "profile": null}"#)
        #expect(empty.cursor == nil && empty.profile == nil && empty.progress.isEmpty && empty.achievements.isEmpty)
    }

    @Test(
        "Each invalid member gets a 400 naming its path",
        arguments: [
            (#"{"cursor": 41}"#, "`cursor` has the wrong type"),
            (#"{"cursor": "x"}"#, "`cursor` is not a cursor this server gave"),
            (#"{"progress": {}}"#, "`progress` has the wrong type"),
            (#"{"achievements": [{"achievementId": "a", "progress": 1}, 2]}"#, "`achievements[1]` must be an object"),
            (#"{"profile": []}"#, "`profile` has the wrong type"),
            (#"{"progress": [{"beliefSystemId": "b", "status": "completed"}]}"#, "`progress[0].lessonId` is required"),
            (
                #"{"progress": [{"beliefSystemId": "b", "lessonId": 5, "status": "completed"}]}"#,
                "`progress[0].lessonId` has the wrong type (id)"
            ),
            (
                #"{"progress": [{"beliefSystemId": "b", "lessonId": "l", "status": "completed", "score": 1.5}]}"#,
                "`progress[0].score` must be an integer"
            ),
            (
                #"{"achievements": [{"achievementId": "a", "completed": "yes"}]}"#,
                "`achievements[0].completed` has the wrong type (boolean)"
            ),
            (#"{"profile": {"streakDays": -1}}"#, "`profile.streakDays` must be an integer from 0 to 100000"),
            (#"{"cursor": "1", "cursor": "2"}"#, "The body is not a JSON object"),
            (#"{"progress": [{"lessonId": "a", "lessonId": "b"}]}"#, "The body is not a JSON object"),
            (#"{"progress": [{"lessonId": "a"}]} x"#, "The body is not a JSON object"),
            (#"[]"#, "The body is not a JSON object"),
        ])
    func refuses(body: String, message: String) {
        #expect(refusal(body) == message)
    }

    @Test("An integral number written with a fraction or an exponent is an integer, as the document's schema says; 1.5 is not")
    func integralNumbers() throws {
        let read = try changes(
            #"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed","score":7.0,"completedAt":7923.0,"earnedXp":1e3}]}"#)
        #expect(read.progress.map { [$0.score, $0.completedAt, $0.earnedXP] } == [[7, 7923, 1000]])
        #expect(
            refusal(#"{"progress":[{"beliefSystemId":"b","lessonId":"l","status":"completed","score":1.5}]}"#)
                == "`progress[0].score` must be an integer")
    }
}
