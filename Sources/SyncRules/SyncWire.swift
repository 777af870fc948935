package import StrictJSON

/// The body of `POST /sync` and its answer, read and written the same way by the server and by
/// SIWAKit: every collection's records, the built-in model's as the declared ones'.
///
///     {"cursor": "42", "limit": 500,
///      "profile": {"totalXp": 100, ...},
///      "progress": [{"beliefSystemId": "stoicism", "lessonId": "l1", ...}],
///      "achievements": [{"achievementId": "first-steps", ...}],
///      "collections": {"workouts": [{"workoutId": "w1", ...}]},
///      "more": true, "resync": true}
///
/// The built-in collections (`SyncSchema.builtIn`) are members of the body itself: `progress` and
/// `achievements` arrays, the `profile` object (a collection of one record per user); each declared
/// collection is an array in `collections`. Their records are read and written by their
/// collection's `SyncRecordCodec`. An answer always holds `cursor`, `profile` (null when it did not
/// change), `progress` and `achievements`; `collections` only when the app declares collections
/// (so an app that declares none gets the bytes it always got); `more` and `resync` only when true.
package struct SyncWire: Sendable {
    /// Every collection a sync carries, in the order of a cursor's lists: the built-in `progress`
    /// (0) and `achievements` (1), the declared collections (2 on), then the built-in `profile`.
    package let schema: SyncSchema
    /// One per collection of `schema`, in its order.
    package let codecs: [SyncRecordCodec]
    /// How many collections the app declares.
    package let declaredCount: Int
    /// For each collection of one record per user (no key fields: the profile), that record as it
    /// is before any device set it; nil for a collection with keys. Made once, read by every sync.
    package let emptyRecords: [SyncRecord?]

    /// The index of `progress` in `schema`.
    package static let progress = 0
    /// The index of `achievements` in `schema`.
    package static let achievements = 1
    /// The index of the first declared collection in `schema`.
    package static let firstDeclared = 2
    /// The index of `profile` in `schema`.
    package var profile: Int { Self.firstDeclared + declaredCount }

    /// The wire of the built-in model and `declared`'s collections.
    /// - Parameter declared: the app's declared collections (`SyncSchema.empty` for none); their
    ///   byte limits are the sync's.
    package init(declared: SyncSchema) {
        let builtIn = SyncSchema.builtIn.collections
        let collections = [builtIn[0], builtIn[1]] + declared.collections + [builtIn[2]]
        schema = SyncSchema(collections: collections, limits: declared.limits)
        codecs = collections.map(SyncRecordCodec.init)
        emptyRecords = codecs.map(\.emptyRecord)
        declaredCount = declared.collections.count
    }

    /// The built-in model alone.
    package static let builtIn = SyncWire(declared: .empty)

    /// A record and the index of its collection in `schema`.
    package struct Item: Sendable, Equatable {
        package var collection: Int
        package var record: SyncRecord

        package init(collection: Int, record: SyncRecord) {
            self.collection = collection
            self.record = record
        }
    }

    /// What is wrong with a body, in a sentence that names the member (`` `progress[3].score` must
    /// be ... ``).
    package struct Problem: Error, Sendable, Equatable {
        package var message: String

        package init(_ message: String) { self.message = message }

        /// `` `path` problem ``.
        package init(_ path: String, _ problem: String) { message = "`\(path)` \(problem)" }
    }

    /// The members of a body that are not records: `cursor` and `limit` of a request, `more` and
    /// `resync` of an answer.
    static let scalarNames = ["cursor", "limit", "more", "resync"]
    /// The members that hold records, then `scalarNames`.
    static let names = JSONNames(["profile", "progress", "achievements", "collections"] + scalarNames)

    // MARK: - Reading

    /// A body as read, before its rules are applied: `records()` and the accessors of its other
    /// members name the first problem, in the order the server always reported them.
    package struct Body: Sendable {
        /// `cursor`, `limit`, `more`, `resync` as read; `.null` when absent.
        var scalars = [SyncRecordCodec.Raw](repeating: .null, count: SyncWire.scalarNames.count)
        /// `progress`, `achievements`: their records, or what is wrong with the member as a whole.
        var lists = [List](repeating: List(), count: 2)
        var profile = List()
        /// The declared collections' records, each with its collection's index in `schema`.
        var declared: [Item] = []
        /// The first problem found in `collections`.
        var declaredProblem: String?

        /// One member holding records (an array, or for `profile` an object).
        struct List: Sendable {
            var shape = Shape.absent
            var items: [Item] = []
            /// How many elements the array had.
            var count = 0
            /// The first problem in a record, in the array's order.
            var problem: String?

            enum Shape: Sendable, Equatable {
                case absent, present, wrongType
                /// An element that is not an object, at this index.
                case notObject(Int)
            }

            /// - Throws: `Problem` when the member `name` is neither absent nor of its kind.
            func checkShape(_ name: String) throws(Problem) {
                switch shape {
                case .absent, .present: return
                case .wrongType: throw Problem(name, "has the wrong type")
                case .notObject(let index): throw Problem("\(name)[\(index)]", "must be an object")
                }
            }
        }

        /// The string of `cursor`; nil when absent or null.
        /// - Throws: `Problem` when it is not a string.
        package func cursor() throws(Problem) -> String? {
            switch scalars[0] {
            case .null: return nil
            case .string(let text): return text
            default: throw Problem("cursor", "has the wrong type")
            }
        }

        /// The integer of `limit`; nil when absent or null.
        /// - Throws: `Problem` when it is not an integer.
        package func limit() throws(Problem) -> Int64? {
            switch scalars[1] {
            case .null: return nil
            case .integer(let value): return value
            case .otherNumber: throw Problem("limit", "must be an integer")
            default: throw Problem("limit", "has the wrong type")
            }
        }

        /// Whether an answer says `more` (`resync` for `flag: 3`).
        func flag(_ slot: Int) -> Bool {
            if case .bool(true) = scalars[slot] { return true }
            return false
        }

        /// An answer's `more`: more pages follow.
        package var more: Bool { flag(2) }
        /// An answer's `resync`: the device must take this answer as its whole state.
        package var resync: Bool { flag(3) }

        /// Every record of the body, built-in ones first (the profile, lessons, achievements), each
        /// with its collection's index.
        /// - Parameter maximumItems: the most records of `progress`, and of `achievements`.
        /// - Throws: `Problem` naming the first member that is not what it must be: the shape of
        ///   `progress`, `achievements` and `profile` first, then the records' fields, then
        ///   `collections`.
        package func records(maximumItems: Int = SyncLimits.maximumItems) throws(Problem) -> [Item] {
            for (list, name) in zip(lists, ["progress", "achievements"]) { try list.checkShape(name) }
            for (list, name) in zip(lists, ["progress", "achievements"]) where list.count > maximumItems {
                throw Problem(name, "has more than \(maximumItems) items")
            }
            try profile.checkShape("profile")
            for list in [profile] + lists { if let problem = list.problem { throw Problem(problem) } }
            if let declaredProblem { throw Problem(declaredProblem) }
            return profile.items + lists[0].items + lists[1].items + declared
        }
    }

    /// Reads a body, which must be one JSON object within `limits`. Members it does not know are
    /// skipped; records are checked against their fields' bounds when `checked` (a request), read by
    /// type only otherwise (an answer, which the server checked, and whose collections the app does
    /// not declare are skipped).
    /// - Throws: `JSONError` when the body is not one JSON object within `limits`.
    package func read(_ bytes: [UInt8], limits: JSONLimits, checked: Bool = true) throws(JSONError) -> Body {
        var body = Body()
        var reader = JSONReader(bytes, limits: limits)
        try reader.beginObject()
        while let member = try reader.nextMember(among: Self.names) {
            switch member {
            case 0: body.profile = try readProfile(&reader, checked: checked)
            case 1, 2: body.lists[member - 1] = try readList(&reader, collection: member - 1, checked: checked)
            case 3: try readDeclared(&reader, into: &body, checked: checked)
            case 4...7: body.scalars[member - 4] = try SyncRecordCodec.Raw(reading: &reader)
            default: try reader.skipValue()
            }
        }
        try reader.end()
        return body
    }

    /// `profile`: one record, or null.
    private func readProfile(_ reader: inout JSONReader, checked: Bool) throws(JSONError) -> Body.List {
        var list = Body.List()
        switch try reader.kind() {
        case .null: try reader.skipValue()
        case .object:
            list.shape = .present
            switch try codecs[profile].read(&reader, path: "profile", checked: checked) {
            case .success(let record): list.items.append(Item(collection: profile, record: record))
            case .failure(let problem): list.problem = problem.message
            }
        default:
            try reader.skipValue()
            list.shape = .wrongType
        }
        return list
    }

    /// `progress` or `achievements`: an array of records, or null.
    private func readList(_ reader: inout JSONReader, collection: Int, checked: Bool) throws(JSONError) -> Body.List {
        var list = Body.List()
        let name = codecs[collection].collection.name
        switch try reader.kind() {
        case .null: try reader.skipValue()
        case .array:
            list.shape = .present
            list.items.reserveCapacity(32)
            try reader.beginArray()
            while try Self.nextElement(&reader, of: name) {
                let element = list.count
                list.count += 1
                guard list.shape == .present, try reader.kind() == .object else {
                    if list.shape == .present { list.shape = .notObject(element) }
                    try reader.skipValue()
                    continue
                }
                switch try codecs[collection].read(&reader, path: "\(name)[\(element)]", checked: checked) {
                case .success(let record): list.items.append(Item(collection: collection, record: record))
                case .failure(let problem): list.problem = list.problem ?? problem.message
                }
            }
        default:
            try reader.skipValue()
            list.shape = .wrongType
        }
        return list
    }

    /// `collections`: an object of each declared collection's records.
    private func readDeclared(_ reader: inout JSONReader, into body: inout Body, checked: Bool) throws(JSONError) {
        switch try reader.kind() {
        case .object: break
        case .null: return try reader.skipValue()
        default:
            try reader.skipValue()
            body.declaredProblem = body.declaredProblem ?? "`collections` must be an object of each collection's records"
            return
        }
        try reader.beginObject()
        while let name = try reader.nextMember() {
            guard let index = declaredIndex(of: name) else {
                try reader.skipValue()
                // An answer may hold collections an older app does not know yet: they are not its.
                if checked {
                    body.declaredProblem = body.declaredProblem ?? "`collections.\(name)` is not a collection this server declares"
                }
                continue
            }
            guard try reader.kind() == .array else {
                try reader.skipValue()
                body.declaredProblem = body.declaredProblem ?? "`collections.\(name)` must be an array of records"
                continue
            }
            let codec = codecs[index]
            let container = "collections." + name
            body.declared.reserveCapacity(body.declared.count + 32)
            try reader.beginArray()
            var count = 0
            while try Self.nextElement(&reader, of: container) {
                let element = count
                switch try codec.read(&reader, path: "\(container)[\(element)]", checked: checked) {
                case .success(let record): body.declared.append(Item(collection: index, record: record))
                case .failure(let problem): body.declaredProblem = body.declaredProblem ?? problem.message
                }
                count += 1
            }
            let limit = codec.collection.limits.itemsPerRequest
            if count > limit { body.declaredProblem = body.declaredProblem ?? "`collections.\(name)` has more than \(limit) items" }
        }
    }

    /// Where the records of the collection at `index` are in a body, for errors: `progress`,
    /// `achievements`, `profile`, or `collections.<name>` for a declared one.
    package func path(of index: Int) -> String {
        let name = codecs[index].collection.name
        return (Self.firstDeclared..<profile).contains(index) ? "collections." + name : name
    }

    /// The index in `schema` of the collection `name` (built in or declared); nil for another name.
    package func index(of name: String) -> Int? {
        for index in codecs.indices where codecs[index].collection.name == name { return index }
        return nil
    }

    /// The index in `schema` of the declared collection `name`; nil when the app declares none such.
    package func declaredIndex(of name: String) -> Int? {
        for index in Self.firstDeclared..<profile where codecs[index].collection.name == name { return index }
        return nil
    }

    /// The list's next element, as `JSONReader.nextElement()`; one past the limit of elements is
    /// refused naming the list (`progress`).
    static func nextElement(_ reader: inout JSONReader, of container: String) throws(JSONError) -> Bool {
        do throws(JSONError) {
            return try reader.nextElement()
        } catch {
            guard case .tooLarge(let offset, let reason) = error else { throw error }
            throw .tooLarge(offset: offset, reason: "`\(container)`: \(reason)")
        }
    }

    // MARK: - Writing

    /// A body of `items`, in their order within each collection, with `members` (such as
    /// `("cursor", "42")`, `("more", true)`) first or last as the body's kind puts them.
    /// - Parameters:
    ///   - cursor: the cursor's text; nil writes `"cursor": null` (a request from nothing).
    ///   - items: the records, each with its collection's index in `schema`.
    ///   - profileAlways: whether `profile` is written (as null) when no item is the profile's, as an
    ///     answer writes it; a request leaves it out.
    ///   - limit: a request's `limit`, written after `cursor` when given.
    ///   - more: an answer's `more`, written when true.
    ///   - resync: an answer's `resync`, written when true.
    /// - Returns: the JSON.
    package func write(
        cursor: String?, items: [Item], profileAlways: Bool = true, limit: Int? = nil, more: Bool = false, resync: Bool = false
    ) -> [UInt8] {
        var json = JSONWriter(capacity: 256 + 160 * items.count)
        json.beginObject()
        json.member("cursor", cursor)
        if let limit { json.member("limit", Int64(limit)) }
        let profileItem = items.last { $0.collection == profile }
        if let profileItem {
            json.key("profile")
            codecs[profile].write(profileItem.record, into: &json)
        } else if profileAlways {
            json.key("profile")
            json.null()
        }
        for collection in [Self.progress, Self.achievements] {
            json.key(codecs[collection].collection.name)
            json.beginArray()
            for item in items where item.collection == collection { codecs[collection].write(item.record, into: &json) }
            json.endArray()
        }
        if declaredCount > 0 {
            json.key("collections")
            json.beginObject()
            for index in Self.firstDeclared..<profile {
                json.key(codecs[index].collection.name)
                json.beginArray()
                for item in items where item.collection == index { codecs[index].write(item.record, into: &json) }
                json.endArray()
            }
            json.endObject()
        }
        if more { json.member("more", true) }
        if resync { json.member("resync", true) }
        json.endObject()
        return json.bytes
    }
}
