package import FastCGI
package import Identity

/// One route of the server: its method and path pattern, and what is decided for it before and
/// around its handler (the body it accepts, who may call it, how its answers look). Each route is
/// declared once, next to its handler; the router finds it once per request, and the worker reads
/// these attributes from it, never from the path's text. nginx/siwa-locations.conf and
/// docs/openapi.yaml state the same facts for nginx and for clients (`RouteAgreementTests`).
package struct Route: Sendable {
    /// A handler: the request, what the router found for it, and the worker thread's use cases.
    package typealias Handler = @Sendable (Request, RouteContext, UseCases) throws -> Response

    /// `GET`, `POST` or `DELETE`; a `GET` route answers `HEAD` too.
    package let method: String
    /// Literal segments and `{name}` parameters, such as `/auth/sessions/{id}` (the metrics' and
    /// logs' `route`).
    package let pattern: String
    /// The body the route accepts: a larger one is refused (413) before the handler runs; the
    /// handler reads JSON within its shape (`RouteContext.bodyLimits`).
    package let bodyLimits: BodyLimits
    /// Who may call the route.
    package let access: Access
    /// How the route's answers look, its errors in particular.
    package let answers: Answers
    /// The route's work.
    let handler: Handler
    /// `pattern`'s segments.
    let segments: [Substring]

    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - pattern: such as `/auth/sessions/{id}`.
    ///   - bodyLimits: the body it accepts; `.auth` (32 KiB) unless it needs more.
    ///   - access: who may call it; anyone unless it says.
    ///   - answers: JSON unless a browser lands on it.
    ///   - handler: its work.
    package init(
        _ method: String, _ pattern: String, bodyLimits: BodyLimits = .auth, access: Access = .anyone, answers: Answers = .json,
        _ handler: @escaping Handler
    ) {
        self.method = method
        self.pattern = pattern
        self.bodyLimits = bodyLimits
        self.access = access
        self.answers = answers
        self.handler = handler
        segments = pattern.split(separator: "/")
    }

    /// Who may call a route, as far as the server decides it before or around the handler.
    package enum Access: Sendable, Equatable {
        /// Anyone: no credentials, or ones the handler reads itself (a guest's access token on a
        /// sign-in, a refresh token, Apple's signature on a notification, the binding cookie).
        case anyone
        /// An active session's Bearer access token or session cookie; a write authenticated by the
        /// cookie must carry our `Origin` (403 `origin_mismatch`). The handler calls
        /// `Caller.authenticate` itself, since it needs the caller.
        case session
        /// The same credentials, for another request: the check nginx's `auth_request` sends
        /// (`?method=` names the other request's method, for the `Origin` rule). nginx makes any
        /// answer of it but 2xx, 401 and 403 a 500, so a repeated header is left to the `Origin`
        /// rule (403) rather than refused (400).
        case authRequest
        /// Anyone, from this site's own pages only: the route sets the session cookie, so the request
        /// must carry `Origin` equal to the public URL (403 `origin_mismatch`), checked before the handler.
        case ownOrigin
        /// The app's older backend, server to server, with a link secret as Bearer (checked by the
        /// use case): a request a browser made (with `Origin` or a cookie) is refused (403
        /// `not_for_browsers`) before the handler.
        case linkSecret
    }

    /// How a route's answers look.
    package enum Answers: Sendable, Equatable {
        /// An API's: errors are JSON (`{"error", "message"}`).
        case json
        /// A browser lands here in a sign-in: errors are a small styled page (HTML) with the same status.
        case page
        /// An OAuth token endpoint (RFC 6749 §5.1, §5.2): every answer, an error too, is never cached
        /// (`Cache-Control: no-store`, `Pragma: no-cache`), and an error's text is in
        /// `error_description` as well as in `message`.
        case tokenEndpoint
    }
}

/// What the router found for a request, given to its handler with the request (as Hummingbird's
/// request context carries its route's `maxUploadSize`).
package struct RouteContext: Sendable {
    /// The path's values of the pattern's `{name}` parameters.
    package let parameters: [String: String]
    /// The route's body limits.
    package let bodyLimits: BodyLimits

    /// - Parameters:
    ///   - parameters: the path parameters.
    ///   - bodyLimits: the limits of the route.
    package init(parameters: [String: String] = [:], bodyLimits: BodyLimits = .auth) {
        self.parameters = parameters
        self.bodyLimits = bodyLimits
    }
}
