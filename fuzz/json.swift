// libFuzzer target: the strict JSON reader, both ways it is used (JSONObject, which scans a whole
// object and reads members on demand, and JSONReader, the pull reader of sync bodies). Whatever
// one accepts the other must accept; neither may crash. Built by scripts/fuzz.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var objectAccepted = false
    if let object = try? JSONObject(parsing: bytes) {
        objectAccepted = true
        for name in object.keys {
            _ = try? object.string(name)
            _ = try? object.number(name)
            _ = try? object.bool(name)
            _ = try? object.stringArray(name)
            _ = try? object.objectArray(name)
            _ = try? object.object(name)
        }
    }
    var reader = JSONReader(bytes)
    let readerAccepted = (try? walk(&reader)) != nil
    if objectAccepted != readerAccepted {
        fatalError("JSONObject \(objectAccepted ? "accepted" : "refused") what JSONReader \(readerAccepted ? "accepted" : "refused")")
    }
    return 0
}

/// Reads one whole object, every value as what it is.
private func walk(_ reader: inout JSONReader) throws {
    try reader.beginObject()
    while try reader.nextMember() != nil { try reader.skipValue() }
    try reader.end()
}
