package import AccountData
package import FastCGI
package import Identity
import JOSE
import StrictJSON
import SyncRules

/// `POST /sync` (Bearer access token, or the web session cookie):
/// `{cursor, limit, profile, progress[], achievements[], collections{}}` →
/// `{cursor, profile, progress[], achievements[], collections{}, more, resync}` with everything that
/// changed for the user since the client's cursor, a page at a time. Every item is validated before
/// anything is written (400 naming the field path); the merge is one transaction.
package enum SyncRoutes {
    /// Items per list and request.
    static let maximumItems = SyncLimits.maximumItems
    static let maximumCount = SyncLimits.maximumCount
    /// 2100-01-01, in Unix milliseconds.
    static let latestTime = SyncLimits.latestTime

    package static func handle(_ request: Request, _ parameters: [String: String], _ useCases: UseCases) throws -> Response {
        // The session is checked by the sync's own statements (one round trip less per sync).
        let (principal, uncheckedSession) = try Caller.authenticateDeferringSessionCheck(request, useCases)
        let collections = useCases.context.core.collections
        let changes = try changes(in: request, collections: collections)
        let delta = try useCases.sync.sync(principal, uncheckedSession: uncheckedSession, changes: changes)
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: SyncDeltaJSON.json(delta, collections: collections))
    }

    // MARK: - Validation

    /// The request body, read and validated. The body is read once by the strict JSON pull
    /// reader into the members a sync uses; the rules are applied once all of it was read, so a
    /// malformed body is refused as such whatever its members hold.
    package static func changes(in request: Request, collections: DeclaredCollections = .none) throws -> SyncChanges {
        try request.requireJSON()
        let body: Body
        do {
            body = try Body(reading: request.body, limits: BodyLimits.forPath(request.path).json, collections: collections)
        } catch JSONError.tooLarge(_, let reason) {
            throw HTTPError.badRequest("The body is larger than a sync accepts: \(reason)")
        } catch {
            throw HTTPError.badRequest("The body is not a JSON object")
        }
        var cursor: (cursor: SyncCursor, tag: String?)?
        if let text = try body.top.string("cursor") {
            guard let value = SyncCursor.presented(text) else { throw invalid("cursor", "is not a cursor this server gave") }
            cursor = value
        }
        var limit: Int?
        if let value = try body.top.integer("limit") {
            guard (1...Int64(SyncCursor.defaultPage)).contains(value) else {
                throw invalid("limit", "must be an integer from 1 to \(SyncCursor.defaultPage)")
            }
            limit = Int(value)
        }
        let progress = try body.progress.items(path: "progress")
        let achievements = try body.achievements.items(path: "achievements")
        guard progress.count <= maximumItems else { throw invalid("progress", "has more than \(maximumItems) items") }
        guard achievements.count <= maximumItems else { throw invalid("achievements", "has more than \(maximumItems) items") }
        let changes = SyncChanges(
            cursor: cursor?.cursor, profile: try body.profile.items(path: "profile").first.map(profile),
            progress: try progress.map(lesson), achievements: try achievements.map(achievement), records: body.records, limit: limit,
            cursorTag: cursor?.tag)
        if let problem = body.recordsProblem { throw HTTPError.badRequest(problem) }
        return changes
    }

    static func profile(_ item: Fields) throws -> SyncProfile {
        SyncProfile(
            totalXP: try count(item, "totalXp", maximum: SyncLimits.maximumTotalXP),
            currentLevel: try count(item, "currentLevel", maximum: SyncLimits.maximumLevel),
            streakDays: try count(item, "streakDays", maximum: SyncLimits.maximumStreakDays),
            lastActiveDate: try date(item, "lastActiveDate"))
    }

    static func lesson(_ item: Fields) throws -> LessonProgress {
        let beliefSystemID = try identifier(item, "beliefSystemId")
        let lessonID = try identifier(item, "lessonId")
        guard let status = LessonStatus(name: try item.requiredString("status")) else {
            throw invalid(item.path("status"), "must be not_started, in_progress or completed")
        }
        return LessonProgress(
            beliefSystemID: beliefSystemID, lessonID: lessonID, status: status, score: try count(item, "score", maximum: maximumCount),
            earnedXP: try count(item, "earnedXp", maximum: maximumCount), completedAt: try time(item, "completedAt"))
    }

    static func achievement(_ item: Fields) throws -> AchievementProgress {
        AchievementProgress(
            achievementID: try identifier(item, "achievementId"),
            progress: try count(item, "progress", maximum: maximumCount), completed: try item.bool("completed") ?? false,
            completedAt: try time(item, "completedAt"))
    }

    /// 1 to 128 characters of `[A-Za-z0-9._:-]`.
    static func identifier(_ item: Fields, _ name: String) throws -> String {
        let value = try item.requiredString(name)
        guard SyncLimits.isIdentifier(value) else { throw invalid(item.path(name), "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -") }
        return value
    }

    static func count(_ item: Fields, _ name: String, maximum: Int64) throws -> Int64 {
        guard let value = try item.integer(name) else { return 0 }
        guard (0...maximum).contains(value) else { throw invalid(item.path(name), "must be an integer from 0 to \(maximum)") }
        return value
    }

    static func time(_ item: Fields, _ name: String) throws -> Int64? {
        guard let value = try item.integer(name) else { return nil }
        guard (0...latestTime).contains(value) else { throw invalid(item.path(name), "must be Unix milliseconds before 2100") }
        return value
    }

    /// `YYYY-MM-DD`, a real calendar date from 2000 to 2099; nil when absent.
    static func date(_ item: Fields, _ name: String) throws -> String? {
        guard let value = try item.string(name) else { return nil }
        guard SyncLimits.isDate(value) else { throw invalid(item.path(name), "must be a date YYYY-MM-DD") }
        return value
    }

    static func invalid(_ path: String, _ problem: String) -> HTTPError { HTTPError.badRequest("`\(path)` \(problem)") }
}
