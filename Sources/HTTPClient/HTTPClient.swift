internal import CCurl
import WebForms

/// Settings of an HTTP client: timeouts, trust, limits.
package struct HTTPClientConfiguration: Sendable {
    /// Seconds to establish the connection (TCP and TLS).
    package var connectTimeout: Double = 3
    /// Seconds for the whole exchange.
    package var timeout: Double = 10
    /// A PEM file of trusted CA certificates instead of the system's (for the emulator's certificate).
    package var caFile: String?
    /// A directory of trusted CA certificates (OpenSSL's hashed layout, such as `/etc/ssl/certs`),
    /// trusted as well as `caFile`.
    package var caDirectory: String?
    /// Responses larger than this are refused.
    package var maximumResponseBytes = 1 << 20

    package init(connectTimeout: Double = 3, timeout: Double = 10, caFile: String? = nil, caDirectory: String? = nil) {
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.caFile = caFile
        self.caDirectory = caDirectory
    }
}

/// An HTTP request.
package struct HTTPRequest: Sendable {
    package var method: String
    package var url: String
    package var headers: [(String, String)]
    package var body: [UInt8]

    package init(method: String, url: String, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// A POST with an `application/x-www-form-urlencoded` body.
    package static func form(url: String, _ fields: [(String, String)], headers: [(String, String)] = []) -> HTTPRequest {
        let body = fields.map { "\(FormEncoding.encode($0.0))=\(FormEncoding.encode($0.1))" }.joined(separator: "&")
        return HTTPRequest(
            method: "POST", url: url,
            headers: [("Content-Type", "application/x-www-form-urlencoded")] + headers, body: Array(body.utf8))
    }
}

/// An HTTP response.
package struct HTTPResponse: Sendable {
    package var status: Int
    /// Header names in lowercase, in the order received.
    package var headers: [(String, String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of the header `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        let name = name.lowercased()
        return headers.first { $0.0 == name }?.1
    }
}

/// Why an exchange failed before a complete response arrived.
package struct HTTPClientError: Error, Equatable, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        case invalidURL
        case connectFailed
        case timedOut
        case tlsFailed
        case responseTooLarge
        case transferFailed
    }

    package let code: Code
    package let reason: String
    /// libcurl's `CURLcode`.
    package let curlCode: Int

    package init(_ code: Code, reason: String, curlCode: Int = 0) {
        self.code = code
        self.reason = reason
        self.curlCode = curlCode
    }

    package var description: String { "HTTPClientError.\(code): \(reason)" }

    /// Errors compare by code only.
    package static func == (lhs: HTTPClientError, rhs: HTTPClientError) -> Bool { lhs.code == rhs.code }
}

/// Initialises libcurl; call once in `main` before any thread starts (`curl_global_init` is not thread-safe).
package func initializeHTTPClientLibrary() {
    precondition(curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK, "curl_global_init failed")
}

/// A small blocking HTTP(S) client over one libcurl easy handle.
///
/// Owns the `CURL*` (`curl_easy_init`, freed with `curl_easy_cleanup`). Not `Sendable`: each
/// worker thread makes its own, which also keeps a warm connection to Apple per thread.
/// Redirects are not followed, only `http` and `https` are allowed, and signals are not used
/// (`CURLOPT_NOSIGNAL`), as a multi-threaded process requires.
package final class HTTPClient {
    private let handle: UnsafeMutableRawPointer
    private let configuration: HTTPClientConfiguration
    /// libcurl writes error details here; it must outlive every transfer.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)

    package init(configuration: HTTPClientConfiguration = HTTPClientConfiguration()) {
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
        self.handle = handle
        self.configuration = configuration
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// Sends `request` and waits for the whole response.
    /// - Throws: `HTTPClientError` if no complete response arrived. Any HTTP status is a response.
    package func send(_ request: HTTPRequest) throws -> HTTPResponse {
        curl_easy_reset(handle)
        let sink = ResponseSink(limit: configuration.maximumResponseBytes)
        let context = Unmanaged.passUnretained(sink).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>?
        for (name, value) in request.headers + [("Expect", "")] {
            headerList = curl_slist_append(headerList, "\(name): \(value)")
        }
        defer { curl_slist_free_all(headerList) }
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)

        var options: [CURLcode] = [
            CCurl_setopt_string(handle, CURLOPT_URL, request.url),
            CCurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"),
            CCurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1),
            CCurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0),
            CCurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(configuration.connectTimeout * 1000)),
            CCurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(configuration.timeout * 1000)),
            CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1),
            CCurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2),
            CCurl_setopt_string(handle, CURLOPT_USERAGENT, "siwa"),
            CCurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer),
            CCurl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList),
            CCurl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, ResponseSink.bodyCallback),
            CCurl_setopt_pointer(handle, CURLOPT_WRITEDATA, context),
            CCurl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, ResponseSink.headerCallback),
            CCurl_setopt_pointer(handle, CURLOPT_HEADERDATA, context),
        ]
        if let caFile = configuration.caFile {
            options.append(CCurl_setopt_string(handle, CURLOPT_CAINFO, caFile))
        }
        if let caDirectory = configuration.caDirectory {
            options.append(CCurl_setopt_string(handle, CURLOPT_CAPATH, caDirectory))
        }
        switch request.method {
        case "GET": options.append(CCurl_setopt_long(handle, CURLOPT_HTTPGET, 1))
        case "POST": options.append(CCurl_setopt_long(handle, CURLOPT_POST, 1))
        default: options.append(CCurl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method))
        }
        if let failed = options.first(where: { $0 != CURLE_OK }) {
            throw error(for: failed)
        }
        let result: CURLcode = request.body.withUnsafeBytes { body in
            if request.method != "GET" {
                // The body is only borrowed by libcurl, for the duration of this perform.
                _ = CCurl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
                _ = CCurl_setopt_pointer(
                    handle, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: body.baseAddress ?? UnsafeRawPointer(errorBuffer)))
            }
            return curl_easy_perform(handle)
        }
        // Do not keep a pointer to the (now released) body in the handle.
        _ = CCurl_setopt_pointer(handle, CURLOPT_POSTFIELDS, nil)
        guard result == CURLE_OK else {
            if sink.overflowed {
                throw HTTPClientError(
                    .responseTooLarge, reason: "response over \(configuration.maximumResponseBytes) bytes", curlCode: Int(result.rawValue))
            }
            throw error(for: result)
        }
        var status = 0
        _ = CCurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return HTTPResponse(status: status, headers: sink.headers, body: sink.body)
    }

    private func error(for code: CURLcode) -> HTTPClientError {
        let detail = String(cString: errorBuffer)
        let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let kind: HTTPClientError.Code
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT: kind = .invalidURL
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_PROXY: kind = .connectFailed
        case CURLE_OPERATION_TIMEDOUT: kind = .timedOut
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER:
            kind = .tlsFailed
        default: kind = .transferFailed
        }
        return HTTPClientError(kind, reason: reason, curlCode: Int(code.rawValue))
    }
}

/// Collects a response while libcurl delivers it.
private final class ResponseSink {
    let limit: Int
    var body: [UInt8] = []
    var headers: [(String, String)] = []
    var overflowed = false

    init(limit: Int) { self.limit = limit }

    static let bodyCallback: CCurl_write_callback = { data, size, count, context in
        let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
        let length = size * count
        guard sink.body.count + length <= sink.limit else {
            sink.overflowed = true
            return 0  // anything but `length` aborts the transfer
        }
        data!.withMemoryRebound(to: UInt8.self, capacity: length) {
            sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
        }
        return length
    }

    static let headerCallback: CCurl_write_callback = { data, size, count, context in
        let sink = Unmanaged<ResponseSink>.fromOpaque(context!).takeUnretainedValue()
        let length = size * count
        let line = data!.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
        if line.hasPrefix("HTTP/") {
            sink.headers.removeAll()  // a new response (after 100 Continue): keep only its headers
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingWhitespace()
            sink.headers.append((name, value))
        }
        return length
    }
}

extension Substring {
    func trimmingWhitespace() -> String {
        // Character.isWhitespace covers "\r\n", which is one Character.
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
