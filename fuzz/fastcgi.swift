// libFuzzer target: a FastCGI connection from nginx, as bytes. Each input is written to one end of a
// socket pair; the other end is handed to `FastCGIConnection` (Sources/FastCGI/FastCGIConnection.swift), so
// libfcgi parses the records (begin request, parameters, body) and our reader turns the parameters
// into a `Request` and reads the body, then a response is written and the request finished. The
// reader may refuse an input; it must not crash, hang, or return a body over its limit. libfcgi is
// the system's build, not instrumented: coverage guides the fuzzer through our code only. Built by
// scripts/fuzz with the FastCGI sources.
//
// libfcgi allocates what a parameter's length says without checking it: a name and value length
// whose sum passes 2^31 make it write through a failed allocation (found here; docs/SECURITY.md,
// "The FastCGI socket"). nginx never sends a parameter near that size, so only inputs shaped like
// nginx's connections are fuzzed (the records in nginx's order, no parameter over 64 KiB): the
// parameters' and the body's bytes, lengths and splits.

internal import CFastCGI

#if canImport(Glibc)
    internal import Glibc
#endif

private let maxBodyBytes = 4096
/// Once: libfcgi's initialisation (without it every accept fails), and broken pipes ignored (the
/// writing end is closed before the response is written).
private let setUp: Void = {
    _ = FCGX_Init()
    _ = signal(SIGPIPE, SIG_IGN)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFastCGI(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    _ = setUp
    guard isShapedLikeNginx(UnsafeBufferPointer(start: data, count: size)) else { return 0 }
    var pair: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { fatalError("socketpair failed") }
    // The input stays in the socket's buffer (libFuzzer's inputs are at most a few KB); closing
    // the writing end makes the reader see the end of the stream, as when nginx closes.
    var written = 0
    while written < size {
        let count = write(pair[0], data + written, size - written)
        guard count > 0 else { fatalError("writing the input failed") }
        written += count
    }
    close(pair[0])
    let connection = FastCGIConnection(
        connected: pair[1], headerNames: ["authorization", "cookie", "origin", "user-agent"], maxBodyBytes: maxBodyBytes)
    guard connection.accept() else { return 0 }
    if let request = try? connection.readRequest() {
        if request.body.count > maxBodyBytes { fatalError("a body of \(request.body.count) bytes, over the limit") }
        connection.write(Response(status: 200, body: Array(request.path.utf8.prefix(64))))
    }
    connection.finish()
    return 0
}

/// Whether `stream` is shaped like what nginx sends: records of version 1 and one request id padded
/// to 8 bytes, an 8-byte begin-request record, parameter records up to an empty one, then body
/// records, the last of them possibly cut short; and no parameter over 64 KiB.
private func isShapedLikeNginx(_ stream: UnsafeBufferPointer<UInt8>) -> Bool {
    var parameters: [UInt8] = []
    var offset = 0
    var expected: [UInt8] = [1]  // the record types allowed next
    var requestID: Int?
    while offset < stream.count {
        guard offset + 8 <= stream.count, stream[offset] == 1, expected.contains(stream[offset + 1]) else { return false }
        let kind = stream[offset + 1]
        let id = Int(stream[offset + 2]) << 8 | Int(stream[offset + 3])
        guard requestID == nil || requestID == id else { return false }
        requestID = id
        let length = Int(stream[offset + 4]) << 8 | Int(stream[offset + 5])
        let padding = Int(stream[offset + 6])
        // nginx pads to 8 bytes; its begin-request record is 8 bytes, unpadded.
        guard padding < 8, kind != 1 || (length == 8 && padding == 0) else { return false }
        let content = offset + 8..<min(offset + 8 + length, stream.count)
        offset += 8 + length + padding
        switch kind {
        case 1: expected = [4]
        case 4 where content.isEmpty: expected = [5]
        case 4: parameters += stream[content]
        default: break
        }
    }
    var position = 0
    func length() -> Int? {
        guard position < parameters.count else { return nil }
        guard parameters[position] & 0x80 != 0 else {
            defer { position += 1 }
            return Int(parameters[position])
        }
        guard position + 4 <= parameters.count else { return nil }
        defer { position += 4 }
        return parameters[position..<position + 4].reduce(0) { $0 << 8 | Int($1) } & 0x7fff_ffff
    }
    while let name = length(), let value = length() {
        guard name + value <= 65536 else { return false }
        position += name + value
    }
    return true
}
