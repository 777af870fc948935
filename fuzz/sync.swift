// libFuzzer target: the sync body reader (`SyncRoutes.Body` in Sources/Server/Sync/SyncRequestBody.swift),
// which reads a body once with the strict JSON pull reader into the members a sync uses, the
// records of declared collections among them (by `SyncRecordCodec`). Checked against `JSONObject`,
// the other reader: both accept or both refuse, every member a sync uses reads the same from both,
// and a declared collection's array gives a record or a problem for each of its elements. Built by
// scripts/fuzz with the reader's file and the StrictJSON, SyncRules and AccountData modules; the
// rest of `SyncRoutes` (its handler and rules) needs the server's other modules, so here the type
// stands alone.

import AccountData
import StrictJSON
import SyncRules

enum SyncRoutes {}

/// Smaller than the route's, so that inputs reach every limit: both readers must refuse alike.
let limits = JSONLimits(depth: 6, members: 12, elements: 12, stringBytes: 48, numberBytes: 24)

/// A collection of every type and rule, with deletion, and a keyless one.
let collections = DeclaredCollections(
    try! SyncSchema(
        declaration: Array(
            #"""
            {"collections": {
              "w": {"key": ["k", "n"], "deletion": {"tombstoneDays": 1}, "limits": {"itemsPerRequest": 3},
                    "fields": {"k": {"type": "id"}, "n": {"type": "integer", "max": 99},
                               "s": {"type": "string", "maxLength": 8, "merge": "latestWins"},
                               "i": {"type": "integer", "min": -5, "max": 5, "merge": "maximum"},
                               "c": {"type": "integer", "max": 9, "merge": "counter"},
                               "t": {"type": "time", "merge": "earliest"}, "d": {"type": "date", "merge": "latest"},
                               "e": {"type": "enum", "values": ["a", "b"], "merge": "forward"},
                               "g": {"type": "set", "maxCount": 2, "maxLength": 4, "merge": "union"},
                               "b": {"type": "boolean", "merge": "stickyTrue"}}},
              "one": {"key": [], "fields": {"x": {"type": "integer", "merge": "minimum"}}}}}
            """#.utf8)))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSyncBody(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let object = try? JSONObject(parsing: bytes, limits: limits)
    let body = try? SyncRoutes.Body(reading: bytes, limits: limits, collections: collections)
    guard let object, let body else {
        if (object == nil) != (body == nil) {
            fatalError("JSONObject \(object == nil ? "refused" : "accepted") what the sync reader \(body == nil ? "refused" : "accepted")")
        }
        return 0
    }
    compare(body.top, object)
    compare(body.profile, object, "profile", single: true)
    compare(body.progress, object, "progress", single: false)
    compare(body.achievements, object, "achievements", single: false)
    compareRecords(body, object)
    return 0
}

/// Each declared collection's records: one read for each object element when nothing was refused.
private func compareRecords(_ body: SyncRoutes.Body, _ object: JSONObject) {
    guard body.recordsProblem == nil else { return }
    guard let declared = try? object.object("collections") else {
        agree(body.records.isEmpty, "collections absent or null")
        return
    }
    for (index, codec) in collections.codecs.enumerated() {
        let elements = (try? declared.objectArray(codec.collection.name)) ?? []
        agree(body.records.filter { $0.collection == index }.count == elements.count, "the records of \(codec.collection.name)")
    }
    for record in body.records {
        // A record written and read again is the same record.
        var reader = JSONReader(collections.codecs[record.collection].json(record.record))
        let again = try? collections.codecs[record.collection].read(&reader, path: "", checked: false).get()
        agree(again == record.record, "a record written and read again")
    }
}

/// The objects of member `name` as the sync reader read them, against `JSONObject`'s.
private func compare(_ objects: SyncRoutes.Objects, _ object: JSONObject, _ name: String, single: Bool) {
    let items = try? objects.items(path: name)
    switch object.kind(of: name) {
    case nil, .null:
        agree(items?.isEmpty == true, "\(name) absent")
    case .object where single:
        guard let items, items.count == 1, let inner = try? object.object(name) else { disagree("\(name) an object") }
        compare(items[0], inner)
    case .array where !single:
        if let inner = try? object.objectArray(name) {
            guard let items, items.count == inner.count else { disagree("\(name) an array of objects") }
            for (item, innerObject) in zip(items, inner) { compare(item, innerObject) }
        } else {
            agree(items == nil, "\(name) an array with an element that is not an object")
        }
    default:
        agree(items == nil, "\(name) of the wrong type")
    }
}

/// Each member of the fields' schema, as the sync reader read it, against `JSONObject`'s reading.
private func compare(_ fields: SyncRoutes.Fields, _ object: JSONObject) {
    for name in fields.schema.names {
        let string = try? fields.string(name)
        let integer = try? fields.integer(name)
        let bool = try? fields.bool(name)
        switch object.kind(of: name) {
        case nil, .null:
            agree(string == .some(nil) && integer == .some(nil) && bool == .some(nil), "\(name) absent")
        case .string:
            agree(string == .some(try? object.string(name)) && integer == nil && bool == nil, "\(name) a string")
        case .number:
            let expected = try? object.integer(name)
            agree(expected == nil ? integer == nil : integer == .some(expected), "\(name) a number")
            agree(string == nil && bool == nil, "\(name) a number, nothing else")
        case .bool:
            agree(bool == .some(try? object.bool(name)) && string == nil && integer == nil, "\(name) a bool")
        case .object, .array:
            agree(string == nil && integer == nil && bool == nil, "\(name) of the wrong type")
        }
    }
}

private func agree(_ condition: Bool, _ what: String) {
    if !condition { disagree(what) }
}

private func disagree(_ what: String) -> Never {
    fatalError("the sync reader and JSONObject disagree: \(what)")
}
