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

    /// The error body of the HTTP contract: `{"error": code, "message": text}`.
    package static func error(_ error: any ClientFacingError, headers: [(String, String)] = []) -> Response {
        json(ErrorBody(error: error.publicCode, message: error.publicMessage), status: error.status, headers: headers)
    }
}

private struct ErrorBody: Encodable {
    let error: String
    let message: String
}
