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
    /// The HTTP status.
    public var status: Int
    /// What went wrong, as a code to act on (`.invalidToken`, `.tokenReused`, `.rateLimited`, ...).
    public var code: Code
    /// The server's explanation, for people.
    public var message: String
    /// `Retry-After` in seconds, on 429 and 503.
    public var retryAfter: Int?

    /// An error answer with `status`, `code`, `message` and `Retry-After`.
    /// - Parameters:
    ///   - status: the HTTP status.
    ///   - code: the server's error code.
    ///   - message: the server's explanation.
    ///   - retryAfter: `Retry-After` in seconds, when the answer had it.
    public init(status: Int, code: Code, message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// Worth trying again later with the same input: the server was busy or could not reach its
    /// database or Apple.
    public var isTemporary: Bool { status == 429 || status >= 500 }

    /// The server's error code: one of the codes of the HTTP contract (docs/openapi.yaml), each a
    /// static member, or a code this version of SIWAKit does not know yet (kept as it came).
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The code as the server sent it.
        public let rawValue: String

        /// The code `rawValue`.
        /// - Parameter rawValue: the code as the server sends it, such as `invalid_token`.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The code written as a string literal.
        /// - Parameter value: the code as the server sends it, such as `invalid_token`.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The code as the server sent it.
        public var description: String { rawValue }

        /// `invalid_request`: The request was malformed: a missing or invalid field, parameter or header.
        public static let invalidRequest: Code = "invalid_request"
        /// `invalid_grant`: Apple refused the authorization code (expired, used, or for another
        /// client), or a browser sign-in's code was refused (unknown, used, expired, another
        /// client's or redirect URI's, or the verifier does not match).
        public static let invalidGrant: Code = "invalid_grant"
        /// `invalid_redirect_uri`: A Services ID's credential came without the redirect URI of its
        /// authorization, or with one that is not registered for it.
        public static let invalidRedirectURI: Code = "invalid_redirect_uri"
        /// `invalid_client`: The client of a token request is not registered with the server.
        public static let invalidClient: Code = "invalid_client"
        /// `unsupported_grant_type`: A token request's `grant_type` is not `authorization_code`.
        public static let unsupportedGrantType: Code = "unsupported_grant_type"
        /// `invalid_token`: A token was refused: the access token or the refresh token is not valid, or the session ended.
        public static let invalidToken: Code = "invalid_token"
        /// `token_reused`: A refresh token was used twice; the session was revoked for safety.
        public static let tokenReused: Code = "token_reused"
        /// `nonce_reused`: The nonce of the sign-in was already used; start a new sign-in.
        public static let nonceReused: Code = "nonce_reused"
        /// `user_mismatch`: The `user` sent with the sign-in is not the subject of the identity token.
        public static let userMismatch: Code = "user_mismatch"
        /// `code_mismatch`: The authorization code was not issued with this identity token.
        public static let codeMismatch: Code = "code_mismatch"
        /// `origin_mismatch`: A cookie-authenticated write came from another origin.
        public static let originMismatch: Code = "origin_mismatch"
        /// `not_found`: No such resource.
        public static let notFound: Code = "not_found"
        /// `method_not_allowed`: The route does not take this method.
        public static let methodNotAllowed: Code = "method_not_allowed"
        /// `already_completed`: This web sign-in was already completed.
        public static let alreadyCompleted: Code = "already_completed"
        /// `payload_too_large`: The request body is larger than the route accepts.
        public static let payloadTooLarge: Code = "payload_too_large"
        /// `unsupported_media_type`: The body is not of the type the route accepts (JSON or a form).
        public static let unsupportedMediaType: Code = "unsupported_media_type"
        /// `rate_limited`: Too many requests: try again after `retryAfter` seconds.
        public static let rateLimited: Code = "rate_limited"
        /// `apple_error`: Apple refused the server's credentials.
        public static let appleError: Code = "apple_error"
        /// `apple_unavailable`: Apple could not be reached; try again shortly.
        public static let appleUnavailable: Code = "apple_unavailable"
        /// `not_configured`: The server is not configured for this (Apple, sessions, web sign-in, linking).
        public static let notConfigured: Code = "not_configured"
        /// `unavailable`: The server could not reach its database; try again after `retryAfter` seconds.
        public static let unavailable: Code = "unavailable"
        /// `internal_error`: An unexpected failure on the server.
        public static let internalError: Code = "internal_error"
        /// `user_disabled`: An operator disabled this account.
        public static let userDisabled: Code = "user_disabled"
        /// `export_limited`: The account was exported several times in the last hour.
        public static let exportLimited: Code = "export_limited"
        /// `identity_in_use`: This Apple ID already belongs to another account.
        public static let identityInUse: Code = "identity_in_use"
        /// `external_user_linked`: The older backend's user is already linked to another account.
        public static let externalUserLinked: Code = "external_user_linked"
        /// `guest_linked`: The guest account already has an Apple ID.
        public static let guestLinked: Code = "guest_linked"
        /// `invalid_link_token`: The link token is not valid.
        public static let invalidLinkToken: Code = "invalid_link_token"
        /// `link_token_expired`: The link token expired.
        public static let linkTokenExpired: Code = "link_token_expired"
        /// `link_token_used`: The link token was already used.
        public static let linkTokenUsed: Code = "link_token_used"
        /// `guests_disabled`: Guest accounts are turned off on this server.
        public static let guestsDisabled: Code = "guests_disabled"
        /// `invalid_link_secret`: The older backend's secret is wrong.
        public static let invalidLinkSecret: Code = "invalid_link_secret"
        /// `not_for_browsers`: A browser may not call this route.
        public static let notForBrowsers: Code = "not_for_browsers"
        /// `bad_request`: nginx could not read the request.
        public static let badRequest: Code = "bad_request"
        /// `forbidden`: nginx refused the request.
        public static let forbidden: Code = "forbidden"
        /// `uri_too_long`: The address is longer than nginx accepts.
        public static let uriTooLong: Code = "uri_too_long"

        /// Every code the HTTP contract documents, in its order.
        public static let documented: [Code] = [
            .invalidRequest, .invalidGrant, .invalidRedirectURI, .invalidClient, .unsupportedGrantType, .invalidToken, .tokenReused,
            .nonceReused, .userMismatch, .codeMismatch,
            .originMismatch,
            .notFound, .methodNotAllowed, .alreadyCompleted, .payloadTooLarge, .unsupportedMediaType, .rateLimited, .appleError,
            .appleUnavailable, .notConfigured, .unavailable, .internalError, .userDisabled, .exportLimited, .identityInUse,
            .externalUserLinked, .guestLinked, .invalidLinkToken, .linkTokenExpired, .linkTokenUsed, .guestsDisabled, .invalidLinkSecret,
            .notForBrowsers, .badRequest, .forbidden, .uriTooLong,
        ]
    }
}

extension SIWAError: CustomStringConvertible, LocalizedError {
    /// What went wrong, in a sentence a developer can read in a log (no token, no secret).
    public var description: String {
        switch self {
        case .signedOut: "Nobody is signed in"
        case .server(let error): error.description
        case .network(let error) where error.isCertificateUntrusted:
            "The server could not be reached: its TLS certificate is not trusted by this device (URLError \(error.code.rawValue): "
                + "\(error.localizedDescription)). For the local stack's self-signed certificate, trust it in the debug build "
                + "with DevelopmentTransport(trustingCertificateAt:) (or add it to the simulator's keychain); a server in "
                + "production needs a certificate from a public CA, with its intermediates"
        case .network(let error): "The server could not be reached: \(SIWAError.explain(error)) (URLError \(error.code.rawValue))"
        case .invalidResponse(let detail): "The server's answer was not what the API promises: \(detail)"
        case .storage(let detail): "The session or sync state could not be read or written on the device: \(detail)"
        case .invalidChange(let detail): "A sync change the server would refuse, not recorded: \(detail)"
        case .untrustedHost(let host): "The access token is not sent to \(host)"
        }
    }

    /// The same sentence, for `localizedDescription`.
    public var errorDescription: String? { description }

    /// A URL error's cause in words: Foundation on Linux names only the numeric code.
    static func explain(_ error: URLError) -> String {
        switch error.code {
        case .notConnectedToInternet: "the device is offline"
        case .timedOut: "the request timed out"
        case .cannotFindHost, .dnsLookupFailed: "the host name did not resolve"
        case .cannotConnectToHost: "the connection was refused"
        case .networkConnectionLost: "the connection broke"
        case .secureConnectionFailed: "the TLS handshake failed"
        case .serverCertificateUntrusted, .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid,
            .serverCertificateHasBadDate:
            "the server's certificate is not trusted"
        case .cancelled: "the request was cancelled"
        default: error.localizedDescription
        }
    }
}

extension ServerError: CustomStringConvertible {
    /// `HTTP 401 invalid_token: The refresh token is not valid`.
    public var description: String { "HTTP \(status) \(code): \(message)" }
}
