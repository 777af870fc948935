import Accounts
package import FastCGI
import JOSE
import MariaDB

/// `POST /sync` (Bearer access token, or the web session cookie):
/// `{cursor, profile, progress[], achievements[]}` → `{cursor, profile, progress[], achievements[]}`
/// with everything that changed for the user since the client's cursor. Every item is validated
/// before anything is written (400 naming the field path); the merge is one transaction.
package enum SyncRoute {
    /// Items per list and request.
    static let maximumItems = 500
    static let maximumCount: Int64 = 1_000_000
    /// 2100-01-01, in Unix milliseconds.
    static let latestTime: Int64 = 4_102_444_800_000

    struct Body: Decodable {
        struct Profile: Decodable {
            var totalXp: Int64?
            var currentLevel: Int64?
            var streakDays: Int64?
            var lastActiveDate: String?
        }

        struct Progress: Decodable {
            var beliefSystemId: String
            var lessonId: String
            var status: String
            var score: Int64?
            var earnedXp: Int64?
            var completedAt: Int64?
        }

        struct Achievement: Decodable {
            var achievementId: String
            var progress: Int64?
            var completed: Bool?
            var completedAt: Int64?
        }

        var cursor: String?
        var profile: Profile?
        var progress: [Progress]?
        var achievements: [Achievement]?
    }

    package static func handle(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        let changes = try validated(try request.decodeJSON(Body.self))
        let delta = try NativeSignIn.retryingConflicts {
            try SyncStore.sync(userID: principal.userID, changes: changes, on: context.database)
        }
        guard let delta else { throw Authentication.unauthorized("The account no longer exists") }
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(json(delta).utf8))
    }

    // MARK: - Validation

    static func validated(_ body: Body) throws -> SyncChanges {
        var cursor: UInt64?
        if let text = body.cursor {
            guard text.utf8.count <= 20, let value = UInt64(text) else { throw invalid("cursor", "is not a cursor this server gave") }
            cursor = value
        }
        let progress = body.progress ?? []
        let achievements = body.achievements ?? []
        guard progress.count <= maximumItems else { throw invalid("progress", "has more than \(maximumItems) items") }
        guard achievements.count <= maximumItems else { throw invalid("achievements", "has more than \(maximumItems) items") }
        return SyncChanges(
            cursor: cursor, profile: try body.profile.map(profile),
            progress: try progress.enumerated().map { try lesson($1, path: "progress[\($0)]") },
            achievements: try achievements.enumerated().map { try achievement($1, path: "achievements[\($0)]") })
    }

    static func profile(_ profile: Body.Profile) throws -> SyncProfile {
        SyncProfile(
            totalXP: try count(profile.totalXp, "profile.totalXp", maximum: 1_000_000_000_000),
            currentLevel: try count(profile.currentLevel, "profile.currentLevel", maximum: 100_000),
            streakDays: try count(profile.streakDays, "profile.streakDays", maximum: 100_000),
            lastActiveDate: try profile.lastActiveDate.map { try date($0, "profile.lastActiveDate") })
    }

    static func lesson(_ item: Body.Progress, path: String) throws -> LessonProgress {
        guard let status = LessonStatus(name: item.status) else {
            throw invalid("\(path).status", "must be not_started, in_progress or completed")
        }
        return LessonProgress(
            beliefSystemID: try identifier(item.beliefSystemId, "\(path).beliefSystemId"),
            lessonID: try identifier(item.lessonId, "\(path).lessonId"), status: status,
            score: try count(item.score, "\(path).score", maximum: maximumCount),
            earnedXP: try count(item.earnedXp, "\(path).earnedXp", maximum: maximumCount),
            completedAt: try time(item.completedAt, "\(path).completedAt"))
    }

    static func achievement(_ item: Body.Achievement, path: String) throws -> AchievementProgress {
        AchievementProgress(
            achievementID: try identifier(item.achievementId, "\(path).achievementId"),
            progress: try count(item.progress, "\(path).progress", maximum: maximumCount), completed: item.completed ?? false,
            completedAt: try time(item.completedAt, "\(path).completedAt"))
    }

    /// 1 to 128 characters of `[A-Za-z0-9._:-]`.
    static func identifier(_ value: String, _ path: String) throws -> String {
        let valid = (1...128).contains(value.utf8.count)
            && value.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || Array("._:-".utf8).contains(byte)
            }
        guard valid else { throw invalid(path, "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -") }
        return value
    }

    static func count(_ value: Int64?, _ path: String, maximum: Int64) throws -> Int64 {
        guard let value else { return 0 }
        guard (0...maximum).contains(value) else { throw invalid(path, "must be an integer from 0 to \(maximum)") }
        return value
    }

    static func time(_ value: Int64?, _ path: String) throws -> Int64? {
        guard let value else { return nil }
        guard (0...latestTime).contains(value) else { throw invalid(path, "must be Unix milliseconds before 2100") }
        return value
    }

    /// `YYYY-MM-DD`, a real calendar date from 2000 to 2099.
    static func date(_ value: String, _ path: String) throws -> String {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard value.utf8.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (2000...2099).contains(year), (1...12).contains(month)
        else { throw invalid(path, "must be a date YYYY-MM-DD") }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { throw invalid(path, "must be a date YYYY-MM-DD") }
        return value
    }

    static func invalid(_ path: String, _ problem: String) -> HTTPError { HTTPError.badRequest("`\(path)` \(problem)") }

    // MARK: - Answer

    static func json(_ delta: SyncDelta) -> String {
        let profile = delta.profile.map { profile in
            JSONText.object([
                ("totalXp", .integer(profile.totalXP)), ("currentLevel", .integer(profile.currentLevel)),
                ("streakDays", .integer(profile.streakDays)), ("lastActiveDate", profile.lastActiveDate.map { .string($0) } ?? .raw("null")),
            ])
        }
        let progress = delta.progress.map { lesson in
            JSONText.object([
                ("beliefSystemId", .string(lesson.beliefSystemID)), ("lessonId", .string(lesson.lessonID)),
                ("status", .string(lesson.status.name)), ("score", .integer(lesson.score)), ("earnedXp", .integer(lesson.earnedXP)),
                ("completedAt", lesson.completedAt.map { .integer($0) } ?? .raw("null")),
            ])
        }
        let achievements = delta.achievements.map { item in
            JSONText.object([
                ("achievementId", .string(item.achievementID)), ("progress", .integer(item.progress)), ("completed", .bool(item.completed)),
                ("completedAt", item.completedAt.map { .integer($0) } ?? .raw("null")),
            ])
        }
        return JSONText.object([
            ("cursor", .string(String(delta.cursor))), ("profile", .raw(profile ?? "null")),
            ("progress", .raw("[" + progress.joined(separator: ",") + "]")),
            ("achievements", .raw("[" + achievements.joined(separator: ",") + "]")),
        ])
    }
}
