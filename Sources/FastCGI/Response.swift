/// One HTTP response, written back to nginx as a CGI-style header block and a body.
package struct Response: Sendable {
    package var status: Int
    /// Extra header lines; `Content-Type` and `Content-Length` are written from the fields below.
    package var headers: [(name: String, value: String)]
    package var contentType: String
    package var body: [UInt8]

    package init(status: Int, contentType: String = "application/json", headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.contentType = contentType
        self.headers = headers.map { (name: $0.0, value: $0.1) }
        self.body = body
    }

    /// The header block as libfcgi expects it on stdout: `Status:` first, then a blank line.
    /// Written straight into one byte array (one allocation, not one per appended string).
    /// `Content-Type` describes a body: an answer without one (a redirect) has none (RFC 9110
    /// §8.3), and no `Content-Length` either when it is a 204.
    package func headerBlock() -> [UInt8] {
        var block: [UInt8] = []
        block.reserveCapacity(96 + contentType.utf8.count + headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 })
        func line(_ name: String, _ value: String) {
            block.append(contentsOf: name.utf8)
            block.append(contentsOf: ": ".utf8)
            block.append(contentsOf: value.utf8)
            block.append(contentsOf: "\r\n".utf8)
        }
        line("Status", "\(status) \(Response.reasonPhrase(status))")
        if !body.isEmpty { line("Content-Type", contentType) }
        if !body.isEmpty || status != 204 { line("Content-Length", String(body.count)) }
        for header in headers { line(header.name, header.value) }
        block.append(contentsOf: "\r\n".utf8)
        return block
    }

    /// The standard reason phrase for the status codes this server uses.
    package static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Payload Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        default: "Status \(status)"
        }
    }
}
