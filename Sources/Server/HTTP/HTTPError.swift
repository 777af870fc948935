/// An error whose code and message may be shown to the client.
package protocol ClientFacingError: Error {
    /// The HTTP status to answer with.
    var status: Int { get }
    /// A stable machine-readable code, such as `invalid_request`.
    var publicCode: String { get }
    /// A human-readable explanation without secrets.
    var publicMessage: String { get }
}

/// A client-facing error of the HTTP layer itself: a request that cannot be decoded, a route that
/// does not exist. The use cases' own errors are mapped in `ErrorResponses`.
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
    package static let internalFailure = HTTPError(500, "internal_error", "The server failed to handle the request")
}
