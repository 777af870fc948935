package import FastCGI
import FoundationEssentials

/// JSON responses. Bodies are encoded with sorted keys, so they are stable for tests and caches.
extension Response {
    /// A JSON response with `value` as the body.
    package static func json<Value: Encodable>(_ value: Value, status: Int = 200, headers: [(String, String)] = []) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own `Encodable` types cannot fail.
        let body = (try? encoder.encode(value)).map(Array.init) ?? Array("{}".utf8)
        return Response(status: status, headers: headers + [("Cache-Control", "no-store")], body: body)
    }

    /// The error body of the HTTP contract: `{"error": code, "message": text}`. A 429 or 503 says
    /// when to retry (`Retry-After`, seconds).
    package static func error(_ error: any ClientFacingError, headers: [(String, String)] = []) -> Response {
        var headers = headers
        if [429, 503].contains(error.status), !headers.contains(where: { $0.0 == "Retry-After" }) {
            headers.append(("Retry-After", String(retryAfterSeconds)))
        }
        return json(ErrorBody(error: error.publicCode, message: error.publicMessage), status: error.status, headers: headers)
    }

    /// The `Retry-After` of a 429 or 503 answer.
    package static let retryAfterSeconds = 5
}

private struct ErrorBody: Encodable {
    let error: String
    let message: String
}
