package import FastCGI

/// Our cookies: `__Host-` so that they are Secure, host-only and for the whole site.
package enum Cookies {
    /// The web session cookie.
    package static let session = "__Host-siwa_session"
    /// The cookie that binds a web sign-in to the browser that started it.
    package static let binding = "__Host-siwa_signin"

    /// The value of cookie `name` in the request's `Cookie` header.
    package static func value(_ name: String, in request: Request) -> String? {
        guard let header = request.headers["cookie"] else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0].trimmingHTTPWhitespace == name {
                return String(parts[1].trimmingHTTPWhitespace)
            }
        }
        return nil
    }

    /// A `Set-Cookie` header for one of our cookies (HttpOnly, Secure, SameSite=Lax, Path=/).
    /// - Parameter maxAge: seconds; 0 deletes the cookie.
    package static func set(_ name: String, _ value: String, maxAge: Int) -> (String, String) {
        ("Set-Cookie", "\(name)=\(value); Path=/; Max-Age=\(maxAge); Secure; HttpOnly; SameSite=Lax")
    }

    /// Deletes the session cookie.
    static let clearSession = set(session, "", maxAge: 0)
    /// Deletes the binding cookie.
    static let clearBinding = set(binding, "", maxAge: 0)
}
