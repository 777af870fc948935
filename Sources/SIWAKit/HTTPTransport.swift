public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Sends one HTTP request. `URLSessionTransport` in apps; tests may put their own in its place.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and returns the answer, whatever its status.
    /// - Parameter request: the request, complete with its headers and body.
    /// - Returns: the answer's body and its HTTP response.
    /// - Throws: `URLError` when no answer arrived (`SIWAKit` reports it as `SIWAError.network`).
    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse)
}

/// Requests through a `URLSession` (the shared one unless given).
public struct URLSessionTransport: HTTPTransport {
    /// The session that sends the requests.
    public let session: URLSession

    /// A transport that sends through `session`.
    /// - Parameter session: the session to send with; the shared one by default.
    public init(session: URLSession = .shared) {
        self.session = session
    }

    /// Sends `request` through `session` and returns the answer, whatever its status.
    /// - Parameter request: the request, complete with its headers and body.
    /// - Returns: the answer's body and its HTTP response.
    /// - Throws: the session's `URLError` when no answer arrived; `URLError(.badServerResponse)` for an
    ///   answer that is not HTTP.
    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (data, http)
    }
}

extension URLError {
    /// A connection that broke before the answer arrived: a kept-alive connection the server closed
    /// (nginx closes idle ones on reload), or a reset. The request may or may not have been handled.
    /// Apple's URLSession reports both as `networkConnectionLost`; the one of swift-corelibs-foundation
    /// (libcurl) reports a close with no byte of an answer as `badServerResponse` ("Empty reply from
    /// server"), which also covers an answer that was not HTTP, and an HTTP/2 connection that ended
    /// under a request (nginx's reload: "Error in the HTTP2 framing layer", "stream was not closed
    /// cleanly") as `unknown`. For the requests sent again, which mean the same when repeated, a
    /// wrong guess costs one more round trip at most.
    var isConnectionBroken: Bool {
        (code == .networkConnectionLost || code == .badServerResponse || code == .unknown) && !isCertificateUntrusted
    }

    /// A server certificate the device does not trust: one of Apple's certificate codes, or on Linux
    /// (swift-corelibs-foundation) `unknown` with libcurl's message ("SSL certificate problem: self-signed
    /// certificate", "SSL: no alternative certificate subject name matches").
    var isCertificateUntrusted: Bool {
        switch code {
        case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .serverCertificateHasBadDate:
            return true
        case .unknown, .secureConnectionFailed:
            let message = localizedDescription
            return message.contains("SSL certificate problem") || message.contains("certificate subject name")
                || message.contains("SSL peer certificate")
        default:
            return false
        }
    }
}

extension URLRequest {
    /// Methods that mean the same when repeated (RFC 9110 §9.2.2): safe to send again after a broken connection.
    var isIdempotent: Bool {
        ["GET", "HEAD", "OPTIONS", "PUT", "DELETE"].contains(httpMethod?.uppercased() ?? "GET")
    }
}
