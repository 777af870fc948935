package import Accounts
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
        // The session is checked by the sync's own statements (one round trip less per sync).
        let (principal, uncheckedSession) = try Authentication.authenticateDeferringSessionCheck(request, context)
        let changes = try changes(in: request)
        let delta = try retryingConflicts {
            try SyncStore.sync(
                userID: principal.userID, session: uncheckedSession, changes: changes, on: context.database, group: context.syncCommits,
                cache: context.syncCache)
        }
        guard let delta else { throw Authentication.sessionEnded }
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: json(delta))
    }

    // MARK: - Validation

    /// The request body, read and validated. The body is read once by the strict JSON pull
    /// reader into the members a sync uses; the rules are applied once all of it was read, so a
    /// malformed body is refused as such whatever its members hold.
    package static func changes(in request: Request) throws -> SyncChanges {
        try request.requireJSON()
        let body: Body
        do { body = try Body(reading: request.body) } catch {
            throw HTTPError.badRequest("The body is not a JSON object")
        }
        var cursor: UInt64?
        if let text = try body.top.string("cursor") {
            guard text.utf8.count <= 20, let value = UInt64(text) else { throw invalid("cursor", "is not a cursor this server gave") }
            cursor = value
        }
        let progress = try body.progress.items(path: "progress")
        let achievements = try body.achievements.items(path: "achievements")
        guard progress.count <= maximumItems else { throw invalid("progress", "has more than \(maximumItems) items") }
        guard achievements.count <= maximumItems else { throw invalid("achievements", "has more than \(maximumItems) items") }
        return SyncChanges(
            cursor: cursor, profile: try body.profile.items(path: "profile").first.map(profile),
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

    /// The answer, written straight into bytes (one sync's answer is made per request).
    static func json(_ delta: SyncDelta) -> [UInt8] {
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

/// The members of a sync's body, as read, before any rule is applied.
struct Body {
    var top = Fields(Schema.top)
    var profile = Objects.absent
    var progress = Objects.absent
    var achievements = Objects.absent

    /// Reads `bytes`, which must be one JSON object.
    init(reading bytes: [UInt8]) throws(JSONError) {
        var reader = JSONReader(bytes)
        try reader.beginObject()
        while let member = try reader.nextMember(among: Schema.body) {
            switch member {
            case 0: profile = try Objects(single: &reader, Schema.profile)
            case 1: progress = try Objects(list: &reader, Schema.lesson)
            case 2: achievements = try Objects(list: &reader, Schema.achievement)
            default: try top.read(member - Schema.bodyObjects.count, &reader)
            }
        }
        try reader.end()
    }
}

/// The members a sync reads from one kind of object (others are skipped), and the member of the
/// body that holds such objects, for error paths.
final class Schema: Sendable {
    static let top = Schema(["cursor"], in: "")
    /// The body's members that hold objects, in the order `Body` reads them.
    static let bodyObjects = ["profile", "progress", "achievements"]
    /// Those, then the members of `top`.
    static let body = JSONNames(bodyObjects + top.names)
    static let profile = Schema(["totalXp", "currentLevel", "streakDays", "lastActiveDate"], in: "profile")
    static let lesson = Schema(["beliefSystemId", "lessonId", "status", "score", "earnedXp", "completedAt"], in: "progress")
    static let achievement = Schema(["achievementId", "progress", "completed", "completedAt"], in: "achievements")

    let names: [String]
    let matcher: JSONNames
    let container: String

    init(_ names: [String], in container: String) {
        self.names = names
        self.matcher = JSONNames(names)
        self.container = container
    }
}

/// An object member, or an array member of objects, as read.
enum Objects {
    case absent
    case objects([Fields])
    /// Present with another kind of value.
    case wrongType
    /// An array with an element that is not an object, at this index.
    case notObject(Int)

    /// Reads a member that should be one object.
    init(single reader: inout JSONReader, _ schema: Schema) throws(JSONError) {
        switch try reader.kind() {
        case .object: self = .objects([try Fields(reading: &reader, schema)])
        case .null: try reader.skipValue(); self = .absent
        default: try reader.skipValue(); self = .wrongType
        }
    }

    /// Reads a member that should be an array of objects.
    init(list reader: inout JSONReader, _ schema: Schema) throws(JSONError) {
        switch try reader.kind() {
        case .array:
            try reader.beginArray()
            var items: [Fields] = []
            items.reserveCapacity(32)
            var notObject: Int?
            while try reader.nextElement() {
                if notObject == nil, try reader.kind() == .object {
                    items.append(try Fields(reading: &reader, schema, index: items.count))
                } else {
                    notObject = notObject ?? items.count
                    try reader.skipValue()
                }
            }
            self = notObject.map { .notObject($0) } ?? .objects(items)
        case .null: try reader.skipValue(); self = .absent
        default: try reader.skipValue(); self = .wrongType
        }
    }

    /// The objects; none when absent.
    /// - Throws: `HTTPError` 400 naming `path` (or the element) when the member is not what it should be.
    func items(path: String) throws -> [Fields] {
        switch self {
        case .absent: return []
        case .objects(let items): return items
        case .wrongType: throw HTTPError.badRequest("`\(path)` has the wrong type")
        case .notObject(let index): throw HTTPError.badRequest("`\(path)[\(index)]` must be an object")
        }
    }
}

/// The members of one JSON object that a sync reads, each error naming the member's path (such
/// as `progress[3].status`); `null` counts as absent.
struct Fields {
    /// A member's value as read.
    enum Value {
        case absent
        case string(String)
        case integer(Int64)
        /// A number that is not an integer within `Int64`.
        case otherNumber
        case bool(Bool)
        case other(JSONObject.Kind)
    }

    let schema: Schema
    /// The values of the schema's members, in its order.
    var values: [Value]
    /// For an array item, its index. The path text is made only for an error message.
    let index: Int?

    init(_ schema: Schema, index: Int? = nil) {
        self.schema = schema
        self.values = Array(repeating: .absent, count: schema.names.count)
        self.index = index
    }

    /// Reads the object the reader stands before.
    init(reading reader: inout JSONReader, _ schema: Schema, index: Int? = nil) throws(JSONError) {
        self.init(schema, index: index)
        try reader.beginObject()
        while let member = try reader.nextMember(among: schema.matcher) { try read(member, &reader) }
    }

    /// Reads the value of the schema's member `slot`; any other (`slot` past the schema) is skipped.
    mutating func read(_ slot: Int, _ reader: inout JSONReader) throws(JSONError) {
        guard slot < values.count else { return try reader.skipValue() }
        switch try reader.kind() {
        case .string: values[slot] = .string(try reader.string())
        case .number: values[slot] = try reader.integer().map { .integer($0) } ?? .otherNumber
        case .bool: values[slot] = .bool(try reader.bool())
        case .null: try reader.skipValue()
        case let kind: try reader.skipValue(); values[slot] = .other(kind)
        }
    }

    /// The object's own path: empty for the body, `progress[3]` for an item.
    var prefix: String { index.map { "\(schema.container)[\($0)]" } ?? schema.container }

    func path(_ name: String) -> String { prefix.isEmpty ? name : prefix + "." + name }

    private func value(_ name: String) -> Value { schema.names.firstIndex(of: name).map { values[$0] } ?? .absent }

    private func wrongType(_ name: String) -> HTTPError { HTTPError.badRequest("`\(path(name))` has the wrong type") }

    func string(_ name: String) throws -> String? {
        switch value(name) {
        case .absent: return nil
        case .string(let value): return value
        default: throw wrongType(name)
        }
    }

    func requiredString(_ name: String) throws -> String {
        guard let value = try string(name) else { throw HTTPError.badRequest("`\(path(name))` is required") }
        return value
    }

    func integer(_ name: String) throws -> Int64? {
        switch value(name) {
        case .absent: return nil
        case .integer(let value): return value
        case .otherNumber: throw HTTPError.badRequest("`\(path(name))` must be an integer")
        default: throw wrongType(name)
        }
    }

    func bool(_ name: String) throws -> Bool? {
        switch value(name) {
        case .absent: return nil
        case .bool(let value): return value
        default: throw wrongType(name)
        }
    }
}
