import AccountData
import StrictJSON
import SyncRules

/// How a sync's body is read: the members it uses, read once by the strict JSON pull reader.
extension SyncRoutes {
    /// The members of a sync's body, as read, before any rule is applied.
    struct Body {
        var top = Fields(Schema.top)
        var profile = Objects.absent
        var progress = Objects.absent
        var achievements = Objects.absent
        /// The records of declared collections, each with its collection's index.
        var records: [CollectionRecord] = []
        /// The first problem found in `collections`, once the whole body is read.
        var recordsProblem: String?

        /// Reads `bytes`, which must be one JSON object within `limits` (the route's, `BodyLimits`).
        init(reading bytes: [UInt8], limits: JSONLimits, collections: DeclaredCollections) throws(JSONError) {
            var reader = JSONReader(bytes, limits: limits)
            try reader.beginObject()
            while let member = try reader.nextMember(among: Schema.body) {
                switch member {
                case 0: profile = try Objects(single: &reader, Schema.profile)
                case 1: progress = try Objects(list: &reader, Schema.lesson)
                case 2: achievements = try Objects(list: &reader, Schema.achievement)
                case 3: try readCollections(&reader, collections)
                default: try top.read(member - Schema.bodyObjects.count, &reader, width: Schema.top.names.count)
                }
            }
            try reader.end()
        }

        /// Reads `collections`: an object of each declared collection's records.
        mutating func readCollections(_ reader: inout JSONReader, _ collections: DeclaredCollections) throws(JSONError) {
            switch try reader.kind() {
            case .object: break
            case .null: return try reader.skipValue()
            default:
                try reader.skipValue()
                recordsProblem = recordsProblem ?? "`collections` must be an object of each collection's records"
                return
            }
            try reader.beginObject()
            while let name = try reader.nextMember() {
                guard let index = collections.schema.index(of: name) else {
                    try reader.skipValue()
                    recordsProblem = recordsProblem ?? "`collections.\(name)` is not a collection this server declares"
                    continue
                }
                guard try reader.kind() == .array else {
                    try reader.skipValue()
                    recordsProblem = recordsProblem ?? "`collections.\(name)` must be an array of records"
                    continue
                }
                let codec = collections.codecs[index]
                let container = "collections." + name
                records.reserveCapacity(records.count + 32)
                try reader.beginArray()
                var count = 0
                while try Objects.nextElement(&reader, of: container) {
                    let element = count
                    switch try codec.read(&reader, path: "\(container)[\(element)]") {
                    case .success(let record): records.append(CollectionRecord(collection: index, record: record))
                    case .failure(let problem): recordsProblem = recordsProblem ?? problem.message
                    }
                    count += 1
                }
                let limit = codec.collection.limits.itemsPerRequest
                if count > limit { recordsProblem = recordsProblem ?? "`collections.\(name)` has more than \(limit) items" }
            }
        }
    }

    /// The members a sync reads from one kind of object (others are skipped), and the member of the
    /// body that holds such objects, for error paths.
    final class Schema: Sendable {
        static let top = Schema(["cursor", "limit"], in: "")
        /// The body's members that hold objects, in the order `Body` reads them.
        static let bodyObjects = ["profile", "progress", "achievements", "collections"]
        /// Those, then the members of `top`.
        static let body = JSONNames(bodyObjects + top.names)
        static let profile = Schema(["totalXp", "currentLevel", "streakDays", "lastActiveDate"], in: "profile")
        static let lesson = Schema(["beliefSystemId", "lessonId", "status", "score", "earnedXp", "completedAt"], in: "progress")
        static let achievement = Schema(["achievementId", "progress", "completed", "completedAt"], in: "achievements")

        let names: [String]
        /// The names' lengths in UTF-8.
        let lengths: [Int]
        let matcher: JSONNames
        let container: String

        init(_ names: [String], in container: String) {
            precondition(names.count <= Fields.capacity, "a schema of more members than Fields keeps")
            self.names = names
            self.lengths = names.map(\.utf8.count)
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

        /// Skips a member that holds neither an object nor an array: `null` is absent, anything
        /// else the wrong type.
        private init(notObjects reader: inout JSONReader) throws(JSONError) {
            let kind = try reader.kind()
            try reader.skipValue()
            self = kind == .null ? .absent : .wrongType
        }

        /// Reads a member that should be one object.
        init(single reader: inout JSONReader, _ schema: Schema) throws(JSONError) {
            switch try reader.kind() {
            case .object: self = .objects([try Fields(reading: &reader, schema)])
            default: self = try Self(notObjects: &reader)
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
                while try Self.nextElement(&reader, of: schema.container) {
                    if notObject == nil, try reader.kind() == .object {
                        items.append(try Fields(reading: &reader, schema, index: items.count))
                    } else {
                        notObject = notObject ?? items.count
                        try reader.skipValue()
                    }
                }
                self = notObject.map { .notObject($0) } ?? .objects(items)
            default: self = try Self(notObjects: &reader)
            }
        }

        /// The list's next element, as `JSONReader.nextElement()`; one past the limit of
        /// elements is refused naming the list (`progress`).
        static func nextElement(_ reader: inout JSONReader, of container: String) throws(JSONError) -> Bool {
            do throws(JSONError) {
                return try reader.nextElement()
            } catch {
                guard case .tooLarge(let offset, let reason) = error else { throw error }
                throw .tooLarge(offset: offset, reason: "`\(container)`: \(reason)")
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

        /// The values of up to `capacity` members, kept in place rather than in an array of their own
        /// (a sync's body has up to 1,000 objects).
        typealias Values = InlineArray<6, Value>
        static let capacity = Values.count

        let schema: Schema
        /// The values of the schema's members, in its order; the slots past them stay absent.
        var values = Values(repeating: .absent)
        /// For an array item, its index. The path text is made only for an error message.
        let index: Int?

        init(_ schema: Schema, index: Int? = nil) {
            self.schema = schema
            self.index = index
        }

        /// Reads the object the reader stands before.
        init(reading reader: inout JSONReader, _ schema: Schema, index: Int? = nil) throws(JSONError) {
            self.init(schema, index: index)
            // Taken out of the schema once per object, not once per member.
            let matcher = schema.matcher
            try reader.beginObject()
            while let member = try reader.nextMember(among: matcher) { try read(member, &reader, width: matcher.count) }
        }

        /// Reads the value of the schema's member `slot`; any other (`slot` from `width`, the schema's
        /// size, on) is skipped.
        mutating func read(_ slot: Int, _ reader: inout JSONReader, width: Int) throws(JSONError) {
            guard slot < width else { return try reader.skipValue() }
            switch try reader.kind() {
            case .string: values[slot] = .string(try reader.string())
            case .number: values[slot] = try reader.integer().map { .integer($0) } ?? .otherNumber
            case .bool: values[slot] = .bool(try reader.bool())
            case .null: try reader.skipValue()
            case let kind:
                try reader.skipValue()
                values[slot] = .other(kind)
            }
        }

        /// The object's own path: empty for the body, `progress[3]` for an item.
        var prefix: String { index.map { "\(schema.container)[\($0)]" } ?? schema.container }

        func path(_ name: String) -> String { prefix.isEmpty ? name : prefix + "." + name }

        /// Names of another length are passed over without comparing strings.
        private func value(_ name: String) -> Value {
            let length = name.utf8.count
            for slot in schema.lengths.indices where schema.lengths[slot] == length && schema.names[slot] == name { return values[slot] }
            return .absent
        }

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
}
