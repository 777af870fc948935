import StrictJSON

/// The collections an app declares, read from its declaration file (JSON), every problem named.
///
///     {"collections": {"workouts": {
///         "key": ["workoutId"],
///         "fields": {
///             "workoutId": {"type": "id"},
///             "note": {"type": "string", "maxLength": 2000, "merge": "latestWins"},
///             "distance": {"type": "integer", "min": 0, "max": 1000000, "merge": "maximum"},
///             "laps": {"type": "integer", "max": 10000, "merge": "counter"}},
///         "deletion": {"tombstoneDays": 30},
///         "limits": {"itemsPerRequest": 200, "itemsPerUser": 20000}}}}
public struct SyncSchema: Sendable, Equatable {
    /// The declared collections, in the file's order.
    public let collections: [SyncCollection]
    /// The bytes of declared records a user may store and one request may write.
    public let limits: Limits

    /// Bytes of declared records (as stored: each record's JSON), for all collections together.
    public struct Limits: Sendable, Equatable {
        /// The most bytes of records a user may store (1,024 to 1,073,741,824; default 64 MiB).
        public var bytesPerUser: Int
        /// The most a guest may store (a guest account, before it is linked to an Apple ID: it costs
        /// nothing to make); at most `bytesPerUser` (default 4 MiB).
        public var guestBytesPerUser: Int
        /// The most bytes of records, merged, one sync request may write (1,024 to 1,048,576, the
        /// most bytes of a sync's answer, which holds them; default 1 MiB).
        public var bytesPerRequest: Int

        /// Limits.
        /// - Parameters:
        ///   - bytesPerUser: the most bytes of records a user may store.
        ///   - guestBytesPerUser: the most a guest may store.
        ///   - bytesPerRequest: the most bytes of records one request may write.
        public init(bytesPerUser: Int = 67_108_864, guestBytesPerUser: Int = 4_194_304, bytesPerRequest: Int = 1_048_576) {
            self.bytesPerUser = bytesPerUser
            self.guestBytesPerUser = min(guestBytesPerUser, bytesPerUser)
            self.bytesPerRequest = bytesPerRequest
        }
    }

    /// A schema of `collections`, trusted as they are.
    /// - Parameters:
    ///   - collections: the collections, in order.
    ///   - limits: the bytes a user may store and a request may write.
    public init(collections: [SyncCollection], limits: Limits = Limits()) {
        self.collections = collections
        self.limits = limits
    }

    /// No declared collections.
    public static let empty = SyncSchema(collections: [])

    /// The index of the collection `name`, if declared.
    /// - Parameter name: a collection's name.
    /// - Returns: its index in `collections`, or nil.
    public func index(of name: String) -> Int? { collections.firstIndex { $0.name == name } }

    /// The names that a declared collection cannot take: the built-in model's members of a sync.
    public static let reservedNames: Set<String> = ["profile", "progress", "achievements", "cursor", "limit", "collections"]
    /// The most collections a schema declares.
    public static let maximumCollections = 32
    /// The most fields (keys included) a collection declares.
    public static let maximumFields = 64
    /// The most key fields.
    public static let maximumKeys = 4
    /// The largest integer a field may hold, and the smallest negated: what JavaScript keeps exactly.
    public static let largestInteger: Int64 = 9_007_199_254_740_991

    /// A declaration file read and checked.
    /// - Parameter text: the file's bytes.
    /// - Throws: `SyncSchemaError` naming every problem found, each with its path in the file.
    public init(declaration text: [UInt8]) throws(SyncSchemaError) {
        var reader = SchemaReader()
        let root: JSONObject
        do {
            root = try JSONObject(parsing: text, limits: JSONLimits(depth: 16, members: 256, elements: 256, stringBytes: 1024))
        } catch {
            throw SyncSchemaError(problems: ["the file is not a JSON object: \(error)"])
        }
        reader.allowOnly(["collections", "limits"], in: root, at: "")
        var limits = Limits()
        if let declared = reader.object("limits", in: root, at: "") {
            reader.allowOnly(["bytesPerUser", "guestBytesPerUser", "bytesPerRequest"], in: declared, at: "limits")
            let largest: Int64 = 1_073_741_824
            limits.bytesPerUser = Int(
                reader.integer("bytesPerUser", in: declared, at: "limits", 1_024...largest, fallback: Int64(limits.bytesPerUser)))
            limits.guestBytesPerUser = Int(
                reader.integer(
                    "guestBytesPerUser", in: declared, at: "limits", 1_024...Int64(limits.bytesPerUser),
                    fallback: Int64(min(limits.guestBytesPerUser, limits.bytesPerUser))))
            limits.bytesPerRequest = Int(
                reader.integer("bytesPerRequest", in: declared, at: "limits", 1_024...1_048_576, fallback: Int64(limits.bytesPerRequest)))
        }
        var collections: [SyncCollection] = []
        if let declared = reader.object("collections", in: root, at: "", required: true) {
            if declared.count > Self.maximumCollections {
                reader.problem("collections", "declares \(declared.count) collections, more than \(Self.maximumCollections)")
            }
            for name in declared.keys {
                let path = "collections." + name
                if Self.reservedNames.contains(name) {
                    reader.problem(path, "is a name the built-in sync uses; choose another")
                } else if !Self.isName(name, length: 64, allowing: "-") {
                    reader.problem(path, "must be 1 to 64 characters of A-Z a-z 0-9 _ -, starting with a letter")
                }
                guard let object = reader.object(name, in: declared, at: "collections", required: true) else { continue }
                if let collection = reader.collection(name, object, at: path) { collections.append(collection) }
            }
        }
        guard reader.problems.isEmpty else { throw SyncSchemaError(problems: reader.problems) }
        self.collections = collections
        self.limits = limits
    }

    /// Whether `name` is 1 to `length` characters of letters, digits, `_` and `extra`, starting with a letter.
    static func isName(_ name: String, length: Int, allowing extra: Character = "_") -> Bool {
        guard let first = name.first, first.isASCII, first.isLetter, name.utf8.count <= length else { return false }
        return name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == extra) }
    }
}

/// A declaration file's problems, each as `path: problem`.
public struct SyncSchemaError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Every problem found, in the file's order.
    public let problems: [String]

    /// The problems, one per line.
    public var description: String { problems.joined(separator: "\n") }
}

/// Reads a declaration, collecting problems instead of stopping at the first.
private struct SchemaReader {
    var problems: [String] = []

    mutating func problem(_ path: String, _ text: String) { problems.append(path.isEmpty ? text : "\(path): \(text)") }

    static func join(_ path: String, _ name: String) -> String { path.isEmpty ? name : path + "." + name }

    /// Refuses members other than `names` (a typo would otherwise be silently ignored).
    mutating func allowOnly(_ names: Set<String>, in object: JSONObject, at path: String) {
        for key in object.keys where !names.contains(key) {
            problem(Self.join(path, key), "is not a member here (expected one of \(names.sorted().joined(separator: ", ")))")
        }
    }

    mutating func object(_ name: String, in object: JSONObject, at path: String, required: Bool = false) -> JSONObject? {
        guard object.contains(name) else {
            if required { problem(Self.join(path, name), "is required") }
            return nil
        }
        guard let value = try? object.object(name) else {
            problem(Self.join(path, name), "must be an object")
            return nil
        }
        return value
    }

    mutating func string(_ name: String, in object: JSONObject, at path: String) -> String? {
        guard object.contains(name) else { return nil }
        guard let value = try? object.string(name) else {
            problem(Self.join(path, name), "must be a string")
            return nil
        }
        return value
    }

    mutating func strings(_ name: String, in object: JSONObject, at path: String) -> [String]? {
        guard object.contains(name) else { return nil }
        guard let value = try? object.stringArray(name) else {
            problem(Self.join(path, name), "must be an array of strings")
            return nil
        }
        return value
    }

    /// An integer member within `range`; `fallback` when absent.
    mutating func integer(_ name: String, in object: JSONObject, at path: String, _ range: ClosedRange<Int64>, fallback: Int64) -> Int64 {
        guard object.contains(name) else { return fallback }
        guard let value = try? object.integer(name), range.contains(value) else {
            problem(Self.join(path, name), "must be an integer from \(range.lowerBound) to \(range.upperBound)")
            return fallback
        }
        return value
    }

    mutating func collection(_ name: String, _ object: JSONObject, at path: String) -> SyncCollection? {
        allowOnly(["key", "fields", "deletion", "limits"], in: object, at: path)
        let before = problems.count
        let keyNames = strings("key", in: object, at: path)
        if keyNames == nil, !object.contains("key") { problem(path + ".key", "is required (an empty array for one record per user)") }
        let fieldsObject = self.object("fields", in: object, at: path, required: true)
        var fields: [(name: String, declaration: JSONObject)] = []
        if let fieldsObject {
            for fieldName in fieldsObject.keys {
                let fieldPath = path + ".fields." + fieldName
                if fieldName == SyncCollection.deletedMember {
                    problem(fieldPath, "is the member that marks a record deleted; choose another name")
                } else if !SyncSchema.isName(fieldName, length: 64) {
                    problem(fieldPath, "must be 1 to 64 characters of A-Z a-z 0-9 _, starting with a letter")
                }
                if let declaration = self.object(fieldName, in: fieldsObject, at: path + ".fields") {
                    fields.append((fieldName, declaration))
                }
            }
            if fieldsObject.count > SyncSchema.maximumFields {
                problem(path + ".fields", "declares \(fieldsObject.count) fields, more than \(SyncSchema.maximumFields)")
            }
        }
        let keyList = keyNames ?? []
        if keyList.count > SyncSchema.maximumKeys { problem(path + ".key", "has more than \(SyncSchema.maximumKeys) fields") }
        if Set(keyList).count != keyList.count { problem(path + ".key", "names a field twice") }
        for keyName in keyList where !fields.contains(where: { $0.name == keyName }) {
            problem(path + ".key", "names \"\(keyName)\", which is not one of its fields")
        }
        let others = fields.filter { !keyList.contains($0.name) }
        let otherNames = others.map(\.name)
        var keys: [SyncField] = []
        for keyName in keyList {
            guard let declaration = fields.first(where: { $0.name == keyName })?.declaration else { continue }
            let fieldPath = path + ".fields." + keyName
            allowOnly(["type", "min", "max", "maxLength"], in: declaration, at: fieldPath)
            guard let type = type(declaration, at: fieldPath) else { continue }
            if !type.canBeKey { problem(fieldPath + ".type", "a key field must be an id, an integer, a string or a date") }
            if case .string(let length) = type, length > 255 { problem(fieldPath + ".maxLength", "a key string is at most 255 bytes") }
            keys.append(SyncField(keyName, type, nil))
        }
        var declared: [SyncField] = []
        for (fieldName, declaration) in others {
            let fieldPath = path + ".fields." + fieldName
            allowOnly(["type", "merge", "min", "max", "maxLength", "maxCount", "values", "of"], in: declaration, at: fieldPath)
            let type = type(declaration, at: fieldPath)
            guard let ruleName = string("merge", in: declaration, at: fieldPath) else {
                if !declaration.contains("merge") { problem(fieldPath + ".merge", "is required") }
                continue
            }
            guard let rule = SyncRule(rawValue: ruleName) else {
                let known = SyncRule.allCases.map(\.rawValue).joined(separator: ", ")
                problem(fieldPath + ".merge", "\"\(ruleName)\" is not a merge rule (one of \(known))")
                continue
            }
            guard let type else { continue }
            if !type.rules.contains(rule) {
                let allowed = type.rules.map(\.rawValue).sorted().joined(separator: ", ")
                problem(fieldPath + ".merge", "\(rule.rawValue) does not apply to a field of type \(type.name) (\(allowed) do)")
            }
            var companion: Int?
            if rule == .withLatest {
                let of = string("of", in: declaration, at: fieldPath)
                if let of, let index = otherNames.firstIndex(of: of),
                    let companionRule = try? others[index].declaration.string("merge"),
                    ["latest", "maximum", "latestWins"].contains(companionRule)
                {
                    companion = index
                } else {
                    problem(fieldPath + ".of", "must name another field of the collection whose rule is latest, maximum or latestWins")
                }
            } else if declaration.contains("of") {
                problem(fieldPath + ".of", "applies only to the withLatest rule")
            }
            declared.append(SyncField(fieldName, type, rule, companion: companion))
        }
        var tombstoneDays: Int?
        if let deletion = self.object("deletion", in: object, at: path) {
            allowOnly(["tombstoneDays"], in: deletion, at: path + ".deletion")
            if !deletion.contains("tombstoneDays") { problem(path + ".deletion.tombstoneDays", "is required") }
            tombstoneDays = Int(integer("tombstoneDays", in: deletion, at: path + ".deletion", 1...3650, fallback: 30))
        }
        var limits = SyncCollection.Limits()
        if let declaredLimits = self.object("limits", in: object, at: path) {
            let limitsPath = path + ".limits"
            allowOnly(["itemsPerRequest", "itemsPerUser", "bytesPerRecord"], in: declaredLimits, at: limitsPath)
            limits.itemsPerRequest = Int(
                integer("itemsPerRequest", in: declaredLimits, at: limitsPath, 1...500, fallback: Int64(limits.itemsPerRequest)))
            limits.itemsPerUser = Int(
                integer("itemsPerUser", in: declaredLimits, at: limitsPath, 1...1_000_000, fallback: Int64(limits.itemsPerUser)))
            limits.bytesPerRecord = Int(
                integer("bytesPerRecord", in: declaredLimits, at: limitsPath, 256...1_048_576, fallback: Int64(limits.bytesPerRecord)))
        }
        if keyList.isEmpty { limits.itemsPerUser = 1 }
        guard problems.count == before else { return nil }
        return SyncCollection(name: name, keys: keys, fields: declared, tombstoneDays: tombstoneDays, limits: limits)
    }

    /// A field's type with its bounds; nil (with the problem noted) when it is not one.
    mutating func type(_ declaration: JSONObject, at path: String) -> SyncFieldType? {
        guard let name = string("type", in: declaration, at: path) else {
            if !declaration.contains("type") { problem(path + ".type", "is required") }
            return nil
        }
        let largest = SyncSchema.largestInteger
        switch name {
        case "integer":
            let minimum = integer("min", in: declaration, at: path, -largest...largest, fallback: 0)
            let maximum = integer("max", in: declaration, at: path, -largest...largest, fallback: largest)
            if minimum > maximum { problem(path + ".min", "is larger than max") }
            return .integer(minimum: minimum, maximum: maximum)
        // At most 8,192: a request's JSON strings are at most 16 KiB.
        case "string": return .string(maximumLength: Int(integer("maxLength", in: declaration, at: path, 1...8_192, fallback: 256)))
        case "id": return .id
        case "boolean": return .boolean
        case "time": return .time
        case "date": return .date
        case "enum":
            let values = strings("values", in: declaration, at: path) ?? []
            if values.isEmpty || values.count > 64 || Set(values).count != values.count
                || !values.allSatisfy({ SyncLimits.isIdentifier($0) && $0.utf8.count <= 64 })
            {
                problem(path + ".values", "must list 1 to 64 different names in order, each 1 to 64 characters of A-Z a-z 0-9 . _ : -")
            }
            return .enumeration(values)
        case "set":
            return .stringSet(
                maximumCount: Int(integer("maxCount", in: declaration, at: path, 1...500, fallback: 100)),
                maximumLength: Int(integer("maxLength", in: declaration, at: path, 1...1024, fallback: 128)))
        default:
            problem(path + ".type", "\"\(name)\" is not a type (one of integer, string, id, boolean, time, date, enum, set)")
            return nil
        }
    }
}
