// libFuzzer target: the sync body reader (`SyncWire.read`, in Sources/SyncRules/SyncWire.swift),
// which reads a body once with the strict JSON pull reader into the members a sync uses: the
// built-in collections' records (`progress`, `achievements`, `profile`) and those of declared
// collections, each by its `SyncRecordCodec`. Checked against `JSONObject`, the other reader: both
// accept or both refuse, `cursor` and `limit` read the same from both, a body whose records are
// all valid gives one record for each element of each collection's array, and every record written
// and read again is the same record. Built by scripts/fuzz with the StrictJSON and SyncRules modules.

import StrictJSON
import SyncRules

/// Smaller than the route's, so that inputs reach every limit: both readers must refuse alike.
let limits = JSONLimits(depth: 6, members: 12, elements: 12, stringBytes: 48, numberBytes: 24)

/// The built-in collections, and declared ones of every type and rule, with deletion, and a keyless one.
let wire = SyncWire(
    declared: try! SyncSchema(
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
    let body = try? wire.read(bytes, limits: limits)
    guard let object, let body else {
        if (object == nil) != (body == nil) {
            fatalError("JSONObject \(object == nil ? "refused" : "accepted") what the sync reader \(body == nil ? "refused" : "accepted")")
        }
        return 0
    }
    switch object.kind(of: "cursor") {
    case nil, .null: agree((try? body.cursor()) == .some(nil), "cursor absent")
    case .string: agree((try? body.cursor()) == .some(try? object.string("cursor")), "cursor a string")
    default: agree((try? body.cursor()) == nil, "cursor of the wrong type")
    }
    if object.kind(of: "limit") == .number, let expected = try? object.integer("limit") {
        agree((try? body.limit()) == .some(expected), "limit an integer")
    }
    guard let records = try? body.records() else { return 0 }
    for (index, codec) in wire.codecs.enumerated() {
        let name = codec.collection.name
        let expected: Int
        if index == wire.profile {
            expected = object.kind(of: "profile") == .object ? 1 : 0
        } else if index < SyncWire.firstDeclared {
            expected = ((try? object.objectArray(name)) ?? []).count
        } else {
            let declared = try? object.object("collections")
            expected = ((try? declared?.objectArray(name)) ?? []).count
        }
        agree(records.filter { $0.collection == index }.count == expected, "the records of \(name)")
    }
    for record in records {
        // A record written and read again is the same record.
        var reader = JSONReader(wire.codecs[record.collection].json(record.record))
        let again = try? wire.codecs[record.collection].read(&reader, path: "", checked: false).get()
        agree(again == record.record, "a record written and read again")
    }
    return 0
}

private func agree(_ condition: Bool, _ what: String) {
    if !condition { disagree(what) }
}

private func disagree(_ what: String) -> Never {
    fatalError("the sync reader and JSONObject disagree: \(what)")
}
