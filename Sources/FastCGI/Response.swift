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
    package func headerBlock() -> [UInt8] {
        var text = "Status: \(status) \(Response.reasonPhrase(status))\r\n"
        if !body.isEmpty || status != 204 {
            text += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        }
        for header in headers {
            text += "\(header.name): \(header.value)\r\n"
        }
        text += "\r\n"
        return Array(text.utf8)
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
