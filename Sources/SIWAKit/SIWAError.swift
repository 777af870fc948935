public import Foundation

/// What a call of `SIWAKit` can fail with.
public enum SIWAError: Error, Sendable, Equatable {
    /// Nobody is signed in (or the session just ended: see `AuthState`).
    case signedOut
    /// The server answered with an error (its JSON `error` code and message).
    case server(ServerError)
    /// The server could not be reached, or the connection broke; the session is kept.
    case network(URLError)
    /// The server's answer was not what the API promises.
    case invalidResponse(String)
    /// The session or sync state could not be read or written on the device.
    case storage(String)
    /// A sync change the server would refuse (an id outside `[A-Za-z0-9._:-]{1,128}`, a count or
    /// time out of range, not a date); it was not recorded.
    case invalidChange(String)
    /// A request for a host the access token must not go to (not the server's, not one of the
    /// client's `apiHosts`), or over plain HTTP to a host that is not the device itself.
    case untrustedHost(String)
}

/// An error answer of the server: `{"error": code, "message": ...}` with its status.
public struct ServerError: Error, Sendable, Equatable {
    public var status: Int
    /// `invalid_token`, `token_reused`, `nonce_reused`, `rate_limited`, `unavailable`, ...
    public var code: String
    public var message: String
    /// `Retry-After` in seconds, on 429 and 503.
    public var retryAfter: Int?

    public init(status: Int, code: String, message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// Worth trying again later with the same input: the server was busy or could not reach its
    /// database or Apple.
    public var isTemporary: Bool { status == 429 || status >= 500 }
}
