import AppleID

/// An error whose code and message may be shown to the client (STYLE.md rule 17).
package protocol ClientFacingError: Error {
    /// The HTTP status to answer with.
    var status: Int { get }
    /// A stable machine-readable code, such as `invalid_request`.
    var publicCode: String { get }
    /// A human-readable explanation without secrets.
    var publicMessage: String { get }
}

/// A client-facing error raised by a handler.
package struct HTTPError: ClientFacingError, Equatable {
    package let status: Int
    package let publicCode: String
    package let publicMessage: String

    package init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.publicCode = code
        self.publicMessage = message
    }

    package static func badRequest(_ message: String) -> HTTPError { HTTPError(400, "invalid_request", message) }
    package static let notFound = HTTPError(404, "not_found", "No such resource")
    package static let payloadTooLarge = HTTPError(413, "payload_too_large", "The request body is too large")
    package static let unavailable = HTTPError(503, "unavailable", "The database is unavailable; try again shortly")
    package static let internalError = HTTPError(500, "internal_error", "The server failed to handle the request")
}


/// A refused identity token is the client's problem (401), except when Apple's keys cannot be
/// had at all, which is ours and temporary (503).
extension SignInError: ClientFacingError {
    package var status: Int { code == .keysUnavailable ? 503 : 401 }
    package var publicCode: String { code == .keysUnavailable ? "unavailable" : "invalid_token" }
    package var publicMessage: String {
        code == .keysUnavailable ? "Apple's signing keys are unavailable; try again shortly" : "The Apple token was refused: \(description)"
    }
}
