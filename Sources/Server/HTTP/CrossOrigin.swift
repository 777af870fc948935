package import FastCGI

/// Which pages of other origins may call siwa from a browser, and which routes they may call: the
/// CORS policy (the Fetch standard), in one place. The worker applies it around every route
/// (`Worker.respond`): the handlers know nothing of it.
///
/// Only the routes an app holding tokens calls are open (`routes`), and only to the exact origins
/// of `SIWA_CORS_ORIGINS`. An answer to such an origin names it in `Access-Control-Allow-Origin`,
/// never `*`, and never carries `Access-Control-Allow-Credentials`: a page on another origin
/// signs in with the app flow and sends its access token (`Authorization: Bearer`); the browser
/// never sends it the session cookie's answers, so the cookie routes keep their `Origin` rule as
/// they are. A page of an origin not listed gets no CORS header (the browser keeps the answer from
/// it), and its preflight a 403.
package struct CrossOrigin: Sendable {
    /// The routes open to the listed origins, method and pattern: the PKCE exchange, the refresh,
    /// the account's calls, sync, and our access tokens' public keys.
    package static let routes: [(method: String, pattern: String)] = [
        ("POST", "/auth/token"), ("POST", "/auth/refresh"), ("GET", "/auth/me"), ("GET", "/auth/sessions"),
        ("DELETE", "/auth/sessions/{id}"), ("POST", "/auth/logout"), ("DELETE", "/auth/account"),
        ("GET", "/auth/account/export"), ("GET", "/auth/jwks.json"), ("POST", "/sync"),
    ]
    /// How long a browser may keep a preflight's answer, in seconds (`Access-Control-Max-Age`):
    /// ten minutes, so that a page's calls cost one preflight per route now and then, and a
    /// removed origin is refused within ten minutes of the restart.
    package static let maximumAge = 600
    /// The request headers a page may send: its access token and its body's media type.
    package static let allowedHeaders = "Authorization, Content-Type"
    /// The answer headers a page may read besides the always-readable ones: when to retry a 429 or 503.
    package static let exposedHeaders = "Retry-After"

    /// The origins allowed, exactly as browsers send them (`scheme://host[:port]`).
    package let origins: Set<String>

    /// - Parameter origins: the exact origins of `SIWA_CORS_ORIGINS` (validated there); none
    ///   opens nothing, and siwa answers as if there were no policy at all.
    package init(origins: [String]) {
        self.origins = Set(origins)
    }

    /// The methods open to other origins on the path of `pattern`; empty when it is not open.
    package static func methods(of pattern: String) -> [String] {
        routes.filter { $0.pattern == pattern }.map(\.method)
    }

    /// The request's `Origin` when it is one listed (sent once).
    func allowedOrigin(of request: Request) -> String? {
        guard request.headers.count(of: "origin") == 1, let origin = request.headers["origin"], origins.contains(origin) else { return nil }
        return origin
    }

    /// The answer to an `OPTIONS` request on the path of `pattern` (the route the router found for
    /// the path): a preflight's answer for a listed origin (204), a 403 for any other (or none);
    /// nil when the path is not open, or no origin is, so that it is answered as before (405).
    package func preflight(_ request: Request, pattern: String?) -> Response? {
        guard request.method == "OPTIONS", !origins.isEmpty, let pattern else { return nil }
        let methods = CrossOrigin.methods(of: pattern)
        guard !methods.isEmpty else { return nil }
        guard let origin = allowedOrigin(of: request) else {
            var refusal = Response.error(
                HTTPError(
                    403, "origin_mismatch",
                    "This origin may not call this API from a browser: only the origins the server lists (SIWA_CORS_ORIGINS) may"))
            refusal.headers.append((name: "Vary", value: "Origin"))
            return refusal
        }
        return Response(
            status: 204,
            headers: [
                ("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Methods", methods.joined(separator: ", ")),
                ("Access-Control-Allow-Headers", CrossOrigin.allowedHeaders),
                ("Access-Control-Max-Age", String(CrossOrigin.maximumAge)), ("Vary", "Origin"),
            ])
    }

    /// Adds the CORS headers to the answer of a request on the path of `pattern`, when the path is
    /// open: `Vary: Origin` always (the answer depends on it), `Access-Control-Allow-Origin` and
    /// `Access-Control-Expose-Headers` for a listed origin. Errors too, so a page reads the
    /// server's error codes.
    package func decorate(_ response: inout Response, for request: Request, pattern: String?) {
        guard !origins.isEmpty, let pattern, !CrossOrigin.methods(of: pattern).isEmpty else { return }
        response.headers.append((name: "Vary", value: "Origin"))
        guard let origin = allowedOrigin(of: request) else { return }
        response.headers.append((name: "Access-Control-Allow-Origin", value: origin))
        response.headers.append((name: "Access-Control-Expose-Headers", value: CrossOrigin.exposedHeaders))
    }
}
