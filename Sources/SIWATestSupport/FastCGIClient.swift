#if canImport(Glibc)
    import Glibc
#endif

/// A minimal FastCGI client (the responder role of the FastCGI 1.0 specification) for tests:
/// it plays nginx's part against a worker pool on a unix socket, without nginx.
package struct FastCGIClient: Sendable {
    /// The parsed answer: the CGI status, the header lines and the body.
    package struct Answer: Sendable {
        package let status: Int
        package let headers: [String: String]
        package let body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    package struct ClientError: Error, CustomStringConvertible {
        package let description: String
    }

    package let socketPath: String

    package init(socketPath: String) { self.socketPath = socketPath }

    /// Sends one request and reads the whole answer.
    /// - Parameters:
    ///   - declaredLength: the CONTENT_LENGTH to announce (defaults to the body's length).
    ///   - parameters: more FastCGI parameters, as nginx's `fastcgi_param` lines send them.
    ///   - sent: called once the connection is made and the request written, before the answer
    ///     is read (the request is then in the server's hands, or its listen queue).
    package func send(
        method: String, uri: String, headers: [String: String] = [:], body: [UInt8] = [], declaredLength: Int? = nil,
        parameters: [String: String] = [:], sent: () -> Void = {}
    ) throws -> Answer {
        let descriptor = try connect()
        defer { close(descriptor) }
        let path = String(uri.prefix { $0 != "?" })
        let query = uri.contains("?") ? String(uri.drop { $0 != "?" }.dropFirst()) : ""
        var params: [(String, String)] = [
            ("REQUEST_METHOD", method), ("REQUEST_URI", uri), ("DOCUMENT_URI", path), ("QUERY_STRING", query),
            ("REMOTE_ADDR", "127.0.0.1"), ("CONTENT_LENGTH", String(declaredLength ?? body.count)),
        ]
        for (name, value) in headers {
            let cgiName = "HTTP_" + name.uppercased().map { $0 == "-" ? "_" : $0 }
            params.append((String(cgiName), value))
        }
        params += parameters.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        var out: [UInt8] = []
        out += record(type: 1, content: [0, 1, 0, 0, 0, 0, 0, 0])  // BEGIN_REQUEST, role responder
        out += record(type: 4, content: params.flatMap(FastCGIClient.pair))
        out += record(type: 4, content: [])
        var offset = 0
        while offset < body.count {
            let end = min(offset + 65_535, body.count)
            out += record(type: 5, content: Array(body[offset..<end]))
            offset = end
        }
        out += record(type: 5, content: [])
        try writeAll(descriptor, out)
        sent()
        return try FastCGIClient.parse(try readStdout(descriptor))
    }

    private func connect() throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ClientError(description: "socket() failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(socketPath.utf8.prefix(raw.count - 1)) + [0]
            raw.copyBytes(from: bytes)
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else {
            close(descriptor)
            throw ClientError(description: "connect(\(socketPath)) failed: errno \(errno)")
        }
        return descriptor
    }

    private func record(type: UInt8, content: [UInt8]) -> [UInt8] {
        let length = content.count
        return [1, type, 0, 1, UInt8(length >> 8), UInt8(length & 0xff), 0, 0] + content
    }

    private static func pair(_ name: String, _ value: String) -> [UInt8] {
        func length(_ count: Int) -> [UInt8] {
            count < 128
                ? [UInt8(count)]
                : [UInt8((count >> 24) | 0x80), UInt8((count >> 16) & 0xff), UInt8((count >> 8) & 0xff), UInt8(count & 0xff)]
        }
        return length(name.utf8.count) + length(value.utf8.count) + Array(name.utf8) + Array(value.utf8)
    }

    private func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            // The server may answer (413) and close before reading the whole body: stop writing then.
            if written <= 0 { return }
            offset += written
        }
    }

    /// Reads records until END_REQUEST and returns the concatenated STDOUT content.
    private func readStdout(_ descriptor: Int32) throws -> [UInt8] {
        var buffer: [UInt8] = []
        var stdout: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            while buffer.count >= 8 {
                let length = Int(buffer[4]) << 8 | Int(buffer[5])
                let total = 8 + length + Int(buffer[6])
                guard buffer.count >= total else { break }
                if buffer[1] == 6 { stdout += buffer[8..<(8 + length)] }
                if buffer[1] == 3 { return stdout }
                buffer.removeFirst(total)
            }
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw ClientError(description: "connection closed before END_REQUEST") }
            buffer += chunk[0..<count]
        }
    }

    private static func parse(_ stdout: [UInt8]) throws -> Answer {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(max(stdout.count - 4, 0))).first(where: { Array(stdout[$0..<min($0 + 4, stdout.count)]) == separator })
        else { throw ClientError(description: "no header block in the answer") }
        var headers: [String: String] = [:]
        for line in String(decoding: stdout[0..<end], as: UTF8.self).split(separator: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingPrefix(" ").description
        }
        let status = Int(headers["status"]?.prefix(3) ?? "200") ?? 0
        return Answer(status: status, headers: headers, body: Array(stdout[(end + 4)...]))
    }
}
