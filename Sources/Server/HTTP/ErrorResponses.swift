package import AppleID
package import FastCGI
package import Identity
package import Logging

/// The one mapping of errors to responses: client-facing errors as they are, the use cases' domain
/// errors to their status and public code, a lost database as 503, anything else as a generic 500
/// logged with its details and the request id (never shown to the client).
package enum ErrorResponses {
    package static func response(for error: any Error, request: Request, logger: Logger) -> Response {
        if let error = error as? MethodNotAllowed {
            return .error(error, headers: [("Allow", error.allowed.joined(separator: ", "))])
        }
        if let error = error as? any ClientFacingError { return .error(error) }
        if let error = error as? IdentityError, error.code == .databaseUnavailable {
            logger.warning("database unavailable", metadata: requestMetadata(error, request: request))
            return .error(HTTPError.unavailable)
        }
        if let error = error as? IdentityError {
            // An export refused for the hour says when the next one is allowed.
            return .error(clientFacing(error), headers: error.code == .exportLimited ? [("Retry-After", error.reason)] : [])
        }
        if let error = error as? SignInError { return .error(clientFacing(error)) }
        var metadata = requestMetadata(error, request: request)
        metadata["error.type"] = "\(type(of: error))"
        logger.error("unhandled error", metadata: metadata)
        return .error(HTTPError.internalFailure)
    }

    /// What a log line about a failed request says of it.
    static func requestMetadata(_ error: any Error, request: Request) -> Logger.Metadata {
        [
            "request.id": "\(request.headers["x-request-id"] ?? "-")", "request.path": "\(request.path)",
            "error": "\(String(reflecting: error))",
        ]
    }

    /// A domain error as the HTTP contract answers it.
    package static func clientFacing(_ error: IdentityError) -> HTTPError {
        switch error.code {
        case .notConfigured: HTTPError(503, "not_configured", "This server is not configured for it: \(error.reason)")
        case .webSignInNotConfigured: HTTPError(404, "not_configured", "Web sign-in needs SIWA_APPLE_SERVICES_ID")
        case .userMismatch: HTTPError(401, "user_mismatch", "`user` is not the subject of the identity token")
        case .codeMismatch:
            HTTPError(401, "code_mismatch", "The authorization code was not issued with this identity token")
        case .nonceReused: HTTPError(401, "nonce_reused", "This nonce was already used; start a new sign-in")
        case .redirectURIRefused: HTTPError(400, "invalid_redirect_uri", error.reason)
        case .appTokenRequestInvalid, .syncLimitExceeded: HTTPError(400, "invalid_request", error.reason)
        case .appClientUnknown: HTTPError(401, "invalid_client", error.reason)
        case .appCodeRefused: HTTPError(400, "invalid_grant", error.reason)
        case .codeRefused:
            HTTPError(400, "invalid_grant", "Apple refused the authorization code (expired, used, or for another client)")
        case .appleUnavailable: HTTPError(503, "apple_unavailable", "Apple could not be reached; try again shortly")
        case .appleRefusedCredentials: HTTPError(502, "apple_error", "Apple refused the server's credentials")
        case .refreshTokenUnknown: HTTPError(401, "invalid_token", "The refresh token is not valid")
        case .sessionEnded: HTTPError(401, "invalid_token", "The session has ended; sign in again")
        case .refreshTokenReused:
            HTTPError(401, "token_reused", "This refresh token was already used; the session has been revoked for safety")
        case .accessTokenRefused: HTTPError(401, "invalid_token", "The access token was refused: \(error.reason)")
        case .accountGone: HTTPError(401, "invalid_token", "The account no longer exists")
        case .notFound: HTTPError.notFound
        case .alreadyCompleted: HTTPError(409, "already_completed", "This sign-in was already completed")
        case .userDisabled: HTTPError(403, "user_disabled", "This account is disabled")
        case .exportLimited: HTTPError(429, "export_limited", "Your data was exported several times in the last hour; try again later")
        case .identityInUse:
            HTTPError(409, "identity_in_use", "This Apple ID already belongs to another account; nothing was merged or changed")
        case .externalUserLinked:
            HTTPError(409, "external_user_linked", "The account of this link token already has a different Apple ID; nothing was changed")
        case .guestLinked:
            HTTPError(409, "guest_linked", "This guest account already has a different Apple ID; nothing was changed")
        case .linkTokenUnknown: HTTPError(401, "invalid_link_token", "The link token is not valid")
        case .linkTokenExpired: HTTPError(401, "link_token_expired", "The link token has expired; ask for a new one")
        case .linkTokenUsed: HTTPError(409, "link_token_used", "The link token was already used; ask for a new one")
        case .guestsDisabled: HTTPError(403, "guests_disabled", "Guest accounts are turned off on this server")
        case .linkingRefused: HTTPError(401, "invalid_link_secret", "A valid link secret (Authorization: Bearer) is required")
        case .databaseUnavailable: HTTPError.unavailable
        }
    }

    /// A refused identity token is the client's problem (401), except when Apple's keys cannot be
    /// had at all, which is ours and temporary (503).
    package static func clientFacing(_ error: SignInError) -> HTTPError {
        error.code == .keysUnavailable
            ? HTTPError(503, "unavailable", "Apple's signing keys are unavailable; try again shortly")
            : HTTPError(401, "invalid_token", "The Apple token was refused: \(error.description)")
    }
}
