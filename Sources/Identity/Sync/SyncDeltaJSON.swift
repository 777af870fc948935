package import AccountData
import Accounts
import JOSE
import StrictJSON
import SyncRules

/// A sync's answer as JSON: the body of `POST /sync` and the `sync` member of an account export.
package enum SyncDeltaJSON {
    /// The answer, written straight into bytes (one sync's answer is made per request).
    package static func json(_ delta: SyncDelta) -> [UInt8] {
        var json = JSONWriter(capacity: 256 + 160 * (delta.progress.count + delta.achievements.count))
        json.beginObject()
        json.member("cursor", String(delta.cursor))
        json.key("profile")
        if let profile = delta.profile {
            json.beginObject()
            json.member("totalXp", profile.totalXP)
            json.member("currentLevel", profile.currentLevel)
            json.member("streakDays", profile.streakDays)
            json.member("lastActiveDate", profile.lastActiveDate)
            json.endObject()
        } else {
            json.null()
        }
        json.key("progress")
        json.beginArray()
        for lesson in delta.progress {
            json.beginObject()
            json.member("beliefSystemId", lesson.beliefSystemID)
            json.member("lessonId", lesson.lessonID)
            json.member("status", lesson.status.name)
            json.member("score", lesson.score)
            json.member("earnedXp", lesson.earnedXP)
            json.member("completedAt", lesson.completedAt)
            json.endObject()
        }
        json.endArray()
        json.key("achievements")
        json.beginArray()
        for item in delta.achievements {
            json.beginObject()
            json.member("achievementId", item.achievementID)
            json.member("progress", item.progress)
            json.member("completed", item.completed)
            json.member("completedAt", item.completedAt)
            json.endObject()
        }
        json.endArray()
        json.endObject()
        return json.bytes
    }
}
