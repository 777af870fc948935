// Shared vectors of the merge rules, for the JavaScript client's test (Tests/Web): a declaration
// covering every type and rule, the built-in model, and for each of many records the changes several
// devices made (edits, deletions, counter increments, as raw JSON a device sends: members left out,
// sets unsorted with duplicates, counters in any order), read by the server's codec, merged in
// several orders by `SyncRules`, and the merged record as the codec writes it; and bodies of
// requests and answers of `POST /sync` holding such records, as `SyncWire` writes them.
//
//     SyncVectors OUTPUT.json [SEED]
import Foundation
import SIWATestSupport
import StrictJSON
import SyncRules

/// A JSON value as a device writes it.
indirect enum Raw {
    case null
    case bool(Bool)
    case integer(Int64)
    case string(String)
    case array([Raw])
    case object([(String, Raw)])

    var text: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .integer(let value): String(value)
        case .string(let value): JSONText.quoted(value)
        case .array(let elements): "[" + elements.map(\.text).joined(separator: ",") + "]"
        case .object(let members): "{" + members.map { JSONText.quoted($0.0) + ":" + $0.1.text }.joined(separator: ",") + "}"
        }
    }
}

let declaration = """
    {"collections": {
      "kinds": {
        "key": ["kid", "knum", "kday", "kname"],
        "fields": {
          "kid": {"type": "id"}, "knum": {"type": "integer", "min": -1000, "max": 1000}, "kday": {"type": "date"},
          "kname": {"type": "string", "maxLength": 16},
          "iMax": {"type": "integer", "min": -1000, "max": 1000, "merge": "maximum"},
          "iMin": {"type": "integer", "min": -1000, "max": 1000, "merge": "minimum"},
          "iLw": {"type": "integer", "min": -1000, "max": 1000, "merge": "latestWins"},
          "iCount": {"type": "integer", "min": 0, "max": 100000, "merge": "counter"},
          "iWithTime": {"type": "integer", "merge": "withLatest", "of": "tLatest"},
          "iWithMax": {"type": "integer", "min": -1000, "max": 1000, "merge": "withLatest", "of": "iMax"},
          "iWithLw": {"type": "integer", "merge": "withLatest", "of": "sLw"},
          "sMax": {"type": "string", "maxLength": 40, "merge": "maximum"},
          "sMin": {"type": "string", "maxLength": 40, "merge": "minimum"},
          "sLw": {"type": "string", "maxLength": 40, "merge": "latestWins"},
          "idMax": {"type": "id", "merge": "maximum"}, "idMin": {"type": "id", "merge": "minimum"},
          "idLw": {"type": "id", "merge": "latestWins"},
          "bSticky": {"type": "boolean", "merge": "stickyTrue"}, "bLw": {"type": "boolean", "merge": "latestWins"},
          "tMax": {"type": "time", "merge": "maximum"}, "tMin": {"type": "time", "merge": "minimum"},
          "tEarliest": {"type": "time", "merge": "earliest"}, "tLatest": {"type": "time", "merge": "latest"},
          "tLw": {"type": "time", "merge": "latestWins"},
          "dMax": {"type": "date", "merge": "maximum"}, "dMin": {"type": "date", "merge": "minimum"},
          "dEarliest": {"type": "date", "merge": "earliest"}, "dLatest": {"type": "date", "merge": "latest"},
          "dLw": {"type": "date", "merge": "latestWins"},
          "eForward": {"type": "enum", "values": ["new", "b", "a", "done"], "merge": "forward"},
          "eLw": {"type": "enum", "values": ["x", "y", "z"], "merge": "latestWins"},
          "tags": {"type": "set", "maxCount": 40, "maxLength": 40, "merge": "union"}},
        "deletion": {"tombstoneDays": 30}},
      "settings": {
        "key": [],
        "fields": {
          "theme": {"type": "enum", "values": ["light", "dark"], "merge": "latestWins"},
          "level": {"type": "integer", "merge": "maximum"},
          "streak": {"type": "integer", "merge": "withLatest", "of": "lastDay"},
          "lastDay": {"type": "date", "merge": "latest"},
          "opens": {"type": "integer", "merge": "counter"}}},
      "byNumber": {
        "key": ["n"],
        "fields": {"n": {"type": "integer", "min": -50, "max": 50},
          "label": {"type": "string", "merge": "latestWins"}, "seen": {"type": "boolean", "merge": "stickyTrue"}},
        "deletion": {"tombstoneDays": 1}},
      "byText": {
        "key": ["title"],
        "fields": {"title": {"type": "string", "maxLength": 40}, "first": {"type": "time", "merge": "earliest"},
          "tags": {"type": "set", "merge": "union"}}},
      "workouts": {
        "key": ["workoutId"],
        "fields": {
          "workoutId": {"type": "id"},
          "note": {"type": "string", "maxLength": 500, "merge": "latestWins"},
          "distance": {"type": "integer", "min": 0, "max": 1000000, "merge": "maximum"},
          "laps": {"type": "integer", "min": 0, "max": 10000, "merge": "counter"},
          "startedAt": {"type": "time", "merge": "earliest"},
          "effort": {"type": "enum", "values": ["planned", "started", "done"], "merge": "forward"},
          "tags": {"type": "set", "maxCount": 20, "maxLength": 32, "merge": "union"},
          "shared": {"type": "boolean", "merge": "stickyTrue"}},
        "deletion": {"tombstoneDays": 30}}}}
    """

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: SyncVectors OUTPUT.json [SEED]\n".utf8))
    exit(2)
}
let seed = arguments.count > 2 ? UInt64(arguments[2]) ?? 1 : 1
var random = SplitMix64(state: seed)

let declared: SyncSchema
do {
    declared = try SyncSchema(declaration: Array(declaration.utf8))
} catch {
    FileHandle.standardError.write(Data("the vectors' declaration: \(error)\n".utf8))
    exit(1)
}

// Characters that order differently by UTF-16 code units and by Unicode scalars (U+FF21 against
// U+1F600), that JSON escapes, and plain ones.
let alphabet: [String] = [
    "a", "b", "B", "z", "0", "~", " ", "é", "ß", "€", "Ａ", "😀", "𝄞", "\"", "\\", "\n", "\t", "\u{1}", "\u{8}", "\u{C}", "\u{7F}",
]
let identifiers = ["a", "b", "a.b", "Z:9", "x-1", "a_", "A", "zz", "0"]
let dates = ["2000-01-01", "2024-02-29", "2026-11-21", "2026-11-22", "2099-12-31", "2050-06-15"]
let devices = ["d-a", "d-b", "d-c", "phone-1", "d-a0"]

@MainActor func pick<T>(_ values: [T]) -> T { values[Int.random(in: 0..<values.count, using: &random)] }
@MainActor func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &random) < p }

@MainActor func text(maximumBytes: Int, nonEmpty: Bool = false) -> String {
    var text = ""
    for _ in 0..<Int.random(in: (nonEmpty ? 1 : 0)...5, using: &random) {
        let next = pick(alphabet)
        if text.utf8.count + next.utf8.count > maximumBytes { break }
        text += next
    }
    return text.isEmpty && nonEmpty ? "k" : text
}

/// A valid plain value of `type`.
@MainActor func value(_ type: SyncFieldType, forKey: Bool = false) -> Raw {
    switch type {
    case .integer(let minimum, let maximum):
        if chance(0.7) { return .integer(Int64.random(in: minimum...min(maximum, minimum + 12), using: &random)) }
        return .integer(Int64.random(in: minimum...maximum, using: &random))
    case .string(let length): return .string(text(maximumBytes: length, nonEmpty: forKey))
    case .id: return .string(pick(identifiers))
    case .boolean: return .bool(chance(0.5))
    case .time:
        if chance(0.2) { return .integer(Int64.random(in: 0...SyncLimits.latestTime, using: &random)) }
        return .integer(1_764_000_000_000 + Int64.random(in: 0...8, using: &random))
    case .date: return .string(pick(dates))
    case .enumeration(let cases): return .string(pick(cases))
    case .stringSet(let count, let length):
        var elements: [Raw] = []
        for _ in 0..<Int.random(in: 0...min(count, 4), using: &random) {
            let element = Raw.string(text(maximumBytes: min(length, 8)))
            elements.append(element)
            if chance(0.3) { elements.append(element) }
        }
        return .array(elements)
    }
}

@MainActor func stamped(_ value: Raw, at: Int64, device: String) -> Raw {
    var members: [(String, Raw)] = [("value", value), ("at", .integer(at)), ("device", .string(device))]
    members.shuffle(using: &random)
    return .object(members)
}

/// One record's vector: the changes of a schedule of devices' edits, deletions and increments; and
/// the merged record.
@MainActor func vector(_ collection: SyncCollection) -> (text: String, merged: SyncRecord) {
    let codec = SyncRecordCodec(collection)
    let keyMembers = collection.keys.map { ($0.name, value($0.type, forKey: true)) }
    // What each device counted so far in each counter (a device's count only grows).
    var counts: [String: [String: Int64]] = [:]
    var clock: Int64 = 1_764_000_000_000
    var changes: [String] = []
    for _ in 0..<Int.random(in: 1...7, using: &random) {
        let device = pick(devices)
        // Clocks of different devices collide often: the device id breaks the tie.
        clock += Int64.random(in: 0...2, using: &random)
        let at = clock
        var members = keyMembers
        let kind = Int.random(in: 0..<10, using: &random)
        if kind == 0, collection.tombstoneDays != nil {
            members.append((SyncCollection.deletedMember, stamped(.bool(true), at: at, device: device)))
        } else if kind == 1, let counter = collection.fields.first(where: { $0.rule == .counter }) {
            counts[counter.name, default: [:]][device, default: 0] += Int64.random(in: 1...3, using: &random)
            members.append((counter.name, .object([(device, .integer(counts[counter.name]![device]!))])))
        } else {
            for field in collection.fields where field.isRequired || chance(0.6) {
                switch field.rule {
                case .latestWins:
                    // Two devices may even send different values of one stamp (which none should).
                    members.append(
                        (field.name, chance(0.1) ? .null : stamped(chance(0.1) ? .null : value(field.type), at: at, device: device)))
                case .counter:
                    counts[field.name, default: [:]][device, default: 0] += Int64.random(in: 0...2, using: &random)
                    var object = counts[field.name]!.map { ($0.key, Raw.integer($0.value)) }
                    object.shuffle(using: &random)
                    members.append((field.name, .object(object)))
                default: members.append((field.name, chance(0.1) && !field.isRequired ? .null : value(field.type)))
                }
            }
            if collection.tombstoneDays != nil, chance(0.8) {
                members.append((SyncCollection.deletedMember, stamped(.bool(false), at: at, device: device)))
            }
        }
        members.shuffle(using: &random)
        changes.append(Raw.object(members).text)
    }
    let records = changes.map { change -> SyncRecord in
        var reader = JSONReader(Array(change.utf8))
        guard case .success(let record)? = try? codec.read(&reader, path: collection.name) else {
            fatalError("a generated change is not valid: \(change)")
        }
        return record
    }
    var orders = [Array(records.indices), Array(records.indices.reversed()), records.indices.shuffled(using: &random)]
    // Each change merged again, somewhere later: merging is idempotent.
    var twice = records.indices.shuffled(using: &random)
    twice += records.indices.shuffled(using: &random).prefix(Int.random(in: 1...records.count, using: &random))
    orders.append(twice)
    var result: String?
    var last = records[0]
    for order in orders {
        var merged = records[order[0]]
        for index in order.dropFirst() { merged = collection.merged(merged, records[index]) }
        let text = String(decoding: codec.json(merged), as: UTF8.self)
        if let result, result != text { fatalError("two orders merged differently:\n\(result)\n\(text)") }
        result = text
        last = merged
    }
    let orderTexts = orders.map { "[" + $0.map(String.init).joined(separator: ",") + "]" }
    let text =
        "{\"collection\":\(JSONText.quoted(collection.name)),\"changes\":[\(changes.map(JSONText.quoted).joined(separator: ","))],"
        + "\"orders\":[\(orderTexts.joined(separator: ","))],\"result\":\(JSONText.quoted(result!))}"
    return (text, last)
}

let wire = SyncWire(declared: declared)
var vectors: [String] = []
/// The merged records of each collection, by its index in `wire.schema`, then by key.
var merged: [Int: [String: SyncRecord]] = [:]
for collection in SyncSchema.builtIn.collections + declared.collections {
    let count = collection.keys.isEmpty ? 60 : (collection.name == "kinds" ? 400 : 150)
    for _ in 0..<count {
        let (text, record) = vector(collection)
        vectors.append(text)
        merged[wire.index(of: collection.name)!, default: [:]][record.key] = record
    }
}

/// Bodies of `POST /sync`: a request (as SIWAKit sends it: the profile, lessons, achievements, then
/// each declared collection, each in order of key) and an answer holding the same records.
var bodies: [String] = []
for _ in 0..<20 {
    var items: [SyncWire.Item] = []
    var texts: [(String, [String])] = []
    for index in [wire.profile, SyncWire.progress, SyncWire.achievements] + Array(SyncWire.firstDeclared..<wire.profile) {
        let records = merged[index] ?? [:]
        let keys = records.keys.sorted().filter { _ in chance(index == wire.profile ? 0.5 : 0.05) }
        items += keys.map { SyncWire.Item(collection: index, record: records[$0]!) }
        let codec = wire.codecs[index]
        texts.append((codec.collection.name, keys.map { String(decoding: codec.json(records[$0]!), as: UTF8.self) }))
    }
    let cursor: String? = chance(0.3) ? nil : "\(Int.random(in: 1...99_999))~6f1c0e9d"
    let request = String(decoding: wire.write(cursor: cursor, items: items, profileAlways: false), as: UTF8.self)
    let (more, resync) = (chance(0.5), chance(0.3))
    let answer = String(decoding: wire.write(cursor: cursor ?? "1", items: items, more: more, resync: resync), as: UTF8.self)
    let records = texts.map { "\(JSONText.quoted($0.0)):[\($0.1.map(JSONText.quoted).joined(separator: ","))]" }.joined(separator: ",")
    bodies.append(
        "{\"cursor\":\(cursor.map(JSONText.quoted) ?? "null"),\"records\":{\(records)},\"more\":\(more),\"resync\":\(resync),"
            + "\"request\":\(JSONText.quoted(request)),\"answer\":\(JSONText.quoted(answer))}")
}
let output =
    "{\"seed\":\(seed),\"declaration\":\(declaration),\"vectors\":[\n" + vectors.joined(separator: ",\n") + "],\n\"bodies\":[\n"
    + bodies.joined(separator: ",\n") + "]}\n"
do {
    try Data(output.utf8).write(to: URL(fileURLWithPath: arguments[1]))
} catch {
    FileHandle.standardError.write(Data("cannot write \(arguments[1]): \(error)\n".utf8))
    exit(1)
}
print("\(vectors.count) records' vectors and \(bodies.count) bodies (seed \(seed)) in \(arguments[1])")
