/// The HTTP headers of a request, with lowercase names.
///
/// Only the headers the application asked for are copied out of the FastCGI parameters:
/// turning every parameter into a `String` costs about 10 µs per request (docs/PERFORMANCE.md).
package struct HTTPHeaders: Sendable, Equatable {
    private var fields: [(name: String, value: String)]

    package init(_ fields: [(String, String)] = []) {
        self.fields = fields.map { (name: $0.0.lowercased(), value: $0.1) }
    }

    /// The first value of the header `name` (case-insensitive), or nil.
    package subscript(_ name: String) -> String? {
        let lowered = name.lowercased()
        return fields.first { $0.name == lowered }?.value
    }

    /// How many times the header `name` (case-insensitive) came.
    package func count(of name: String) -> Int {
        let lowered = name.lowercased()
        return fields.count { $0.name == lowered }
    }

    /// Adds a header; `name` is stored lowercased.
    package mutating func add(_ name: String, _ value: String) {
        fields.append((name: name.lowercased(), value: value))
    }

    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// One HTTP request as nginx hands it over FastCGI: plain Swift values, no C types.
///
/// Handlers take and tests build this type directly, so the application runs in process without a socket.
package struct Request: Sendable {
    /// The HTTP method in upper case (`REQUEST_METHOD`).
    package var method: String
    /// The normalised, percent-decoded path without the query (`DOCUMENT_URI`).
    package var path: String
    /// The raw query string without the leading `?` (`QUERY_STRING`).
    package var query: String
    /// The captured request headers.
    package var headers: HTTPHeaders
    /// The client address nginx saw (`REMOTE_ADDR`).
    package var remoteAddress: String
    /// The request body, read completely and within the configured size limit.
    package var body: [UInt8]
    /// How long the request waited for a worker thread: from the moment nginx handed it to siwa
    /// (`REQUEST_QUEUED_AT`, nginx's `$msec`) until a worker read it; zero when nginx does not send
    /// the parameter. When every thread waits for a database that stopped answering, requests wait
    /// in the socket's queue behind them, and this time is counted in their `SIWA_DB_TIMEOUT`.
    package var queued: Duration = .zero

    package init(
        method: String,
        path: String,
        query: String = "",
        headers: HTTPHeaders = HTTPHeaders(),
        remoteAddress: String = "127.0.0.1",
        body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
        self.body = body
    }
}
