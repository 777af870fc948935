internal import CFastCGI

#if canImport(Glibc)
    internal import Glibc
#endif

/// One worker thread's FastCGI request slot: accepts a connection, reads a `Request`, writes a `Response`.
///
/// Owns a heap-allocated `FCGX_Request`: libfcgi keeps pointers into it (`reqDataPtr` in its streams),
/// so it must never move. Confined to the thread that created it; not `Sendable`.
final class FastCGIConnection {
    private let request: UnsafeMutablePointer<FCGX_Request>
    private let capturedHeaders: [(param: [UInt8], name: String)]
    private let maxBodyBytes: Int
    private var bodyBuffer: [UInt8]

    /// - Parameters:
    ///   - listener: the shared listening socket (borrowed).
    ///   - headerNames: the request headers to copy into `Request.headers`.
    ///   - maxBodyBytes: the hard limit on a request body.
    convenience init(listener: Listener, headerNames: [String], maxBodyBytes: Int) {
        self.init(listeningSocket: listener.descriptor, headerNames: headerNames, maxBodyBytes: maxBodyBytes)
    }

    /// A slot whose first request comes from `descriptor`, a connected socket it then owns, rather
    /// than from a listener; later accepts fail (for the FastCGI fuzz target, which feeds it bytes).
    convenience init(connected descriptor: Int32, headerNames: [String], maxBodyBytes: Int) {
        self.init(listeningSocket: -1, headerNames: headerNames, maxBodyBytes: maxBodyBytes)
        // libfcgi reads from a request's connection when it holds one, and accepts only when not;
        // an accept first finishes the previous request, which closes its connection unless kept.
        request.pointee.ipcFd = descriptor
        request.pointee.keepConnection = 1
    }

    private init(listeningSocket: Int32, headerNames: [String], maxBodyBytes: Int) {
        request = UnsafeMutablePointer<FCGX_Request>.allocate(capacity: 1)
        request.initialize(to: FCGX_Request())
        FCGX_InitRequest(request, listeningSocket, 0)
        capturedHeaders = headerNames.map { name in
            let param = "HTTP_" + name.uppercased().replacingDashes()
            return (param: Array(param.utf8), name: name.lowercased())
        }
        self.maxBodyBytes = maxBodyBytes
        bodyBuffer = [UInt8](repeating: 0, count: 16 * 1024)
    }

    deinit {
        FCGX_Free(request, 1)
        request.deinitialize(count: 1)
        request.deallocate()
    }

    /// Blocks until nginx hands over the next request. Returns false when the listener was shut down.
    func accept() -> Bool {
        FCGX_Accept_r(request) >= 0
    }

    /// Finishes the current request: flushes output and closes the connection to nginx.
    ///
    /// libfcgi's own close shuts the connection down for writing, then waits for nginx to close its
    /// end, reading what nginx still sends: unread data would make the close reset the connection.
    /// When the request's input was read to its end there is none, and the connection is closed at
    /// once, without that wait (a wake-up and three system calls per request).
    func finish() {
        let input = request.pointee.in
        guard request.pointee.keepConnection == 0, let input, FCGX_HasSeenEOF(input) == EOF, FCGX_GetError(input) == 0 else {
            return FCGX_Finish_r(request)
        }
        // What FCGX_Finish_r does before its close: the end of the output and the end-of-request record.
        _ = FCGX_FClose(request.pointee.err)
        _ = FCGX_FClose(request.pointee.out)
        let descriptor = request.pointee.ipcFd
        FCGX_Free(request, 0)
        Glibc.close(descriptor)
        // The next accept takes a new connection only when the request holds none.
        request.pointee.ipcFd = -1
    }

    /// The CGI parameters read into `Request` fields.
    private enum Field: CaseIterable {
        case method, documentURI, requestURI, query, remoteAddress, contentLength, requestID, contentType, queuedAt

        var parameter: [UInt8] {
            let name =
                switch self {
                case .method: "REQUEST_METHOD"
                case .documentURI: "DOCUMENT_URI"
                case .requestURI: "REQUEST_URI"
                case .query: "QUERY_STRING"
                case .remoteAddress: "REMOTE_ADDR"
                case .contentLength: "CONTENT_LENGTH"
                // nginx's $request_id (fastcgi_param REQUEST_ID): clients cannot set it.
                case .requestID: "REQUEST_ID"
                case .contentType: "CONTENT_TYPE"
                // nginx's $msec as it sent the request: seconds since the epoch, with milliseconds.
                case .queuedAt: "REQUEST_QUEUED_AT"
                }
            return Array(name.utf8)
        }
    }

    private static let fields = Field.allCases.map { (name: $0.parameter, field: $0) }
    private static let headerPrefix = Array("HTTP_".utf8)

    /// Reads the parameters and the body of the accepted request.
    ///
    /// Parameter names are compared as bytes and only the wanted values become `String`s
    /// (docs/PERFORMANCE.md, "FastCGI parameters").
    /// - Throws: `FastCGIError(.bodyTooLarge)` beyond `maxBodyBytes`, `.bodyUnreadable` on a short body.
    func readRequest() throws -> Request {
        var method = "GET"
        var path = "/"
        var query = ""
        var remote = ""
        var declaredLength = -1
        var headers = HTTPHeaders()
        var uri: String?
        var contentType: String?
        var queued = Duration.zero
        var cursor = request.pointee.envp
        while let entry = cursor?.pointee {
            cursor = cursor! + 1
            guard let equals = strchr(entry, Int32(UInt8(ascii: "="))) else { continue }
            let name = UnsafeRawBufferPointer(start: entry, count: UnsafeRawPointer(equals) - UnsafeRawPointer(entry))
            let value = { String(cString: equals + 1) }
            if FastCGIConnection.matches(name, FastCGIConnection.headerPrefix, prefixOnly: true) {
                if let header = capturedHeaders.first(where: { FastCGIConnection.matches(name, $0.param) }) {
                    headers.add(header.name, value())
                }
                continue
            }
            switch FastCGIConnection.fields.first(where: { FastCGIConnection.matches(name, $0.name) })?.field {
            case .method: method = value()
            case .documentURI: path = value()
            case .requestURI: uri = value()
            case .query: query = value()
            case .remoteAddress: remote = value()
            case .contentLength: declaredLength = Int(value()) ?? -1
            case .requestID: headers.add("x-request-id", value())
            case .contentType: contentType = value()
            case .queuedAt: queued = FastCGIConnection.queued(since: value())
            case nil: break
            }
        }
        // nginx's CONTENT_TYPE is the first Content-Type header: taken only when the handler does
        // not capture the headers themselves, which show a repeated one.
        if let contentType, headers["content-type"] == nil { headers.add("content-type", contentType) }
        if path == "/", let uri {
            path = String(uri.prefix { $0 != "?" })
        }
        if declaredLength > maxBodyBytes {
            throw FastCGIError(.bodyTooLarge, reason: "declared \(declaredLength) bytes")
        }
        let body = try readBody(expected: declaredLength)
        var read = Request(method: method, path: path, query: query, headers: headers, remoteAddress: remote, body: body)
        read.queued = queued
        return read
    }

    /// The time since `sentAt` (nginx's `$msec`: seconds since the epoch, with a fraction), by the
    /// wall clock nginx read on the same host. Zero for a value that does not parse, lies ahead, or
    /// is more than an hour old: a clock that was set meanwhile, not a request that waited.
    static func queued(since sentAt: String) -> Duration {
        guard let seconds = Double(sentAt), seconds.isFinite else { return .zero }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let waited = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - seconds
        guard waited > 0, waited < 3600 else { return .zero }
        return .milliseconds(Int64(waited * 1000))
    }

    /// Whether `name` equals `expected` (or starts with it, when `prefixOnly`), compared as bytes.
    private static func matches(_ name: UnsafeRawBufferPointer, _ expected: [UInt8], prefixOnly: Bool = false) -> Bool {
        guard prefixOnly ? name.count >= expected.count : name.count == expected.count else { return false }
        return expected.withUnsafeBytes { memcmp(name.baseAddress!, $0.baseAddress!, expected.count) == 0 }
    }

    /// Reads the body until end of stream, never more than `maxBodyBytes`.
    private func readBody(expected: Int) throws -> [UInt8] {
        var body: [UInt8] = []
        if expected > 0 { body.reserveCapacity(expected) }
        while true {
            let count = bodyBuffer.withUnsafeMutableBytes { buffer in
                FCGX_GetStr(buffer.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(buffer.count), request.pointee.in)
            }
            if count <= 0 { break }
            guard body.count + Int(count) <= maxBodyBytes else {
                throw FastCGIError(.bodyTooLarge, reason: "more than \(maxBodyBytes) bytes")
            }
            body.append(contentsOf: bodyBuffer[0..<Int(count)])
        }
        if expected >= 0 && body.count != expected {
            throw FastCGIError(.bodyUnreadable, reason: "read \(body.count) of \(expected) bytes")
        }
        return body
    }

    /// Writes `response` to nginx. Write errors (nginx gave up on the client) are ignored.
    func write(_ response: Response) {
        let out = request.pointee.out
        let header = response.headerBlock()
        header.withUnsafeBytes { bytes in
            _ = FCGX_PutStr(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(bytes.count), out)
        }
        if !response.body.isEmpty {
            response.body.withUnsafeBytes { bytes in
                _ = FCGX_PutStr(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(bytes.count), out)
            }
        }
    }
}

extension String {
    /// `X-Request-Id` -> `X_REQUEST_ID`, the CGI spelling of a header name.
    fileprivate func replacingDashes() -> String {
        String(map { $0 == "-" ? "_" : $0 })
    }
}
