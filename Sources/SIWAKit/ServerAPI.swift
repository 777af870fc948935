import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The server's HTTP API: builds requests, sends them, and turns answers into values or errors.
struct ServerAPI: Sendable {
    let baseURL: URL
    let transport: any HTTPTransport

    /// A request for `path` on the server, with a JSON body when given.
    func request(_ method: String, _ path: String, json body: (any Encodable)? = nil) throws -> URLRequest {
        guard let url = URL(string: path, relativeTo: baseURL) else { throw SIWAError.invalidResponse("not a path: \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONCoding.encoder().encode(body)
        }
        return request
    }

    /// Sends `request`, and once more when the connection broke before its answer and the request
    /// is `replayable`: one whose second arrival means the same as the first, so that it does not
    /// matter whether the server handled the first. By default, a request of an idempotent method.
    ///
    /// The connection breaking under a request is routine, not an outage: nginx closes its kept-alive
    /// connections on every reload, and a request sent on one as it closes gets no answer.
    /// - Throws: `SIWAError.network` when no answer arrived.
    func send(_ request: URLRequest, replayable: Bool? = nil) async throws -> (Data, HTTPURLResponse) {
        var retried = false
        while true {
            do {
                return try await transport.send(request)
            } catch let error as URLError {
                guard !retried, error.isConnectionBroken, replayable ?? request.isIdempotent else { throw SIWAError.network(error) }
                retried = true
            }
        }
    }

    /// Sends `request` (replayed as `send` says) and decodes a 2xx answer as `T`.
    /// - Throws: `SIWAError.server` for an error answer.
    func call<T: Decodable>(_ request: URLRequest, as type: T.Type = T.self, replayable: Bool? = nil) async throws -> T {
        try Self.decoded(try await send(request, replayable: replayable), of: request)
    }

    /// The value of a 2xx answer to `request`.
    /// - Throws: `SIWAError.server` for an error answer, `.invalidResponse` for one that is not a `T`.
    static func decoded<T: Decodable>(_ answer: (Data, HTTPURLResponse), of request: URLRequest) throws -> T {
        try check(answer.0, answer.1)
        do {
            return try JSONCoding.decoder().decode(T.self, from: answer.0)
        } catch {
            throw SIWAError.invalidResponse("\(request.httpMethod ?? "GET") \(request.url?.path ?? ""): \(error)")
        }
    }

    /// Throws the server's error for a non-2xx answer.
    static func check(_ data: Data, _ response: HTTPURLResponse) throws {
        guard !(200..<300).contains(response.statusCode) else { return }
        throw SIWAError.server(serverError(data, response))
    }

    static func serverError(_ data: Data, _ response: HTTPURLResponse) -> ServerError {
        struct Body: Decodable {
            var error: String
            var message: String?
        }
        let body = try? JSONDecoder().decode(Body.self, from: data)
        return ServerError(
            status: response.statusCode, code: ServerError.Code(rawValue: body?.error ?? "http_\(response.statusCode)"),
            message: body?.message ?? HTTPURLResponse.localizedString(forStatusCode: response.statusCode),
            retryAfter: response.value(forHTTPHeaderField: "Retry-After").flatMap { Int($0) })
    }
}
