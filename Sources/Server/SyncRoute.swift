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

    package static func handle(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let principal = try Authentication.authenticate(request, context)
        let changes = try changes(in: request)
        let delta = try retryingConflicts {
            try SyncStore.sync(userID: principal.userID, changes: changes, on: context.database, group: context.syncCommits, cache: context.syncCache)
        }
        guard let delta else { throw Authentication.unauthorized("The account no longer exists") }
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(json(delta).utf8))
    }

    // MARK: - Validation

    /// The request body, read and validated. The body is parsed by the strict byte-level JSON
    /// parser (Foundation's `JSONDecoder` cost as much as the rest of a sync).
    static func changes(in request: Request) throws -> SyncChanges {
        try request.requireJSON()
        let body: Fields
        do { body = Fields(object: try JSONObject(parsing: request.body)) } catch {
            throw HTTPError.badRequest("The body is not a JSON object")
        }
        var cursor: UInt64?
        if let text = try body.string("cursor") {
            guard text.utf8.count <= 20, let value = UInt64(text) else { throw invalid("cursor", "is not a cursor this server gave") }
            cursor = value
        }
        let progress = try body.objects("progress") ?? []
        let achievements = try body.objects("achievements") ?? []
        guard progress.count <= maximumItems else { throw invalid("progress", "has more than \(maximumItems) items") }
        guard achievements.count <= maximumItems else { throw invalid("achievements", "has more than \(maximumItems) items") }
        return SyncChanges(
            cursor: cursor, profile: try body.object("profile").map(profile),
            progress: try progress.map(lesson), achievements: try achievements.map(achievement))
    }

    static func profile(_ item: Fields) throws -> SyncProfile {
        SyncProfile(
            totalXP: try count(item, "totalXp", maximum: 1_000_000_000_000), currentLevel: try count(item, "currentLevel", maximum: 100_000),
            streakDays: try count(item, "streakDays", maximum: 100_000),
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
        let valid = (1...128).contains(value.utf8.count)
            && value.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
        guard valid else { throw invalid(item.path(name), "must be 1 to 128 characters of A-Z a-z 0-9 . _ : -") }
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
        let parts = value.split(separator: "-", omittingEmptySubsequences: false)
        guard value.utf8.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (2000...2099).contains(year), (1...12).contains(month)
        else { throw invalid(item.path(name), "must be a date YYYY-MM-DD") }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        guard (1...days).contains(day) else { throw invalid(item.path(name), "must be a date YYYY-MM-DD") }
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

/// Typed reads of one JSON object of a request, each error naming the member's path (such as
/// `progress[3].status`); `null` counts as absent.
struct Fields {
    let object: JSONObject
    /// Where the object is: the member holding it (empty for the body) and, for an array item, its
    /// index. The path text is made only for an error message.
    let container: String
    let index: Int?

    init(object: JSONObject, container: String = "", index: Int? = nil) {
        self.object = object
        self.container = container
        self.index = index
    }

    /// The object's own path: empty for the body, `progress[3]` for an item.
    var prefix: String { index.map { "\(container)[\($0)]" } ?? container }

    func path(_ name: String) -> String { prefix.isEmpty ? name : prefix + "." + name }

    private func present(_ name: String, _ kind: JSONObject.Kind) throws -> Bool {
        switch object.kind(of: name) {
        case nil, .null: return false
        case kind: return true
        default: throw HTTPError.badRequest("`\(path(name))` has the wrong type")
        }
    }

    func string(_ name: String) throws -> String? {
        guard try present(name, .string), let value = try? object.string(name) else { return nil }
        return value
    }

    func requiredString(_ name: String) throws -> String {
        guard let value = try string(name) else { throw HTTPError.badRequest("`\(path(name))` is required") }
        return value
    }

    func integer(_ name: String) throws -> Int64? {
        guard try present(name, .number) else { return nil }
        guard let value = try? object.integer(name) else { throw HTTPError.badRequest("`\(path(name))` must be an integer") }
        return value
    }

    func bool(_ name: String) throws -> Bool? {
        guard try present(name, .bool) else { return nil }
        return try? object.bool(name)
    }

    func object(_ name: String) throws -> Fields? {
        guard try present(name, .object), let value = try? object.object(name) else { return nil }
        return Fields(object: value, container: path(name))
    }

    func objects(_ name: String) throws -> [Fields]? {
        guard try present(name, .array) else { return nil }
        do {
            return try object.objectArray(name)?.enumerated().map { Fields(object: $1, container: path(name), index: $0) }
        } catch .typeMismatch(let member, _) {
            throw HTTPError.badRequest("`\(prefix.isEmpty ? member : prefix + "." + member)` must be an object")
        } catch {
            throw HTTPError.badRequest("`\(path(name))` is not a valid JSON array")
        }
    }
}
