import Accounts
package import FastCGI
import Foundation
import HTTPClient
import JOSE

/// Who is calling a protected route: the user and the session, and how they proved it.
package struct Principal: Sendable, Equatable {
    package var userID: UInt64
    package var sessionID: UInt64
    /// True for the web page's session cookie, false for a Bearer access token.
    package var viaCookie: Bool
}

/// The one authentication of every protected route: a Bearer access token (native apps) or the
/// web session cookie. Either way the session must still be active, so a revoked session or a
/// deleted account stops working at once, not when the access token expires. Writes made with the
/// cookie must come from our own origin (`Origin` header, DESIGN.md rule 6).
package enum Authentication {
    /// The web session cookie: `__Host-` so it is Secure, host-only and for the whole site.
    package static let sessionCookie = "__Host-siwa_session"
    /// The cookie that binds a web sign-in to the browser that started it.
    package static let bindingCookie = "__Host-siwa_signin"

    package static func authenticate(_ request: Request, _ context: WorkerContext) throws -> Principal {
        let (principal, unchecked) = try authenticateDeferringSessionCheck(request, context)
        if let unchecked, try !Sessions.isActive(sessionID: unchecked, userID: principal.userID, on: context.database) {
            throw sessionEnded
        }
        return principal
    }

    /// `authenticate` for a route whose own statements check the session, saving a round trip to
    /// the database (`SyncStore.sync`): the session of a Bearer access token is not checked here but
    /// returned as `uncheckedSession`, which the route must check before it answers or writes. A
    /// cookie's session is checked here (finding it is how the cookie is read); `uncheckedSession`
    /// is then nil.
    package static func authenticateDeferringSessionCheck(
        _ request: Request, _ context: WorkerContext
    ) throws -> (principal: Principal, uncheckedSession: UInt64?) {
        let settings = try context.requireSessions()
        if let authorization = request.headers["authorization"] {
            guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
                throw unauthorized("Use `Authorization: Bearer <access token>`")
            }
            let claims = try settings.accessTokens.verify(String(authorization.dropFirst(7)))
            return (Principal(userID: claims.userID, sessionID: claims.sessionID, viaCookie: false), claims.sessionID)
        }
        guard let cookie = cookieValue(sessionCookie, in: request), cookie.utf8.count <= 128 else {
            throw unauthorized("An access token (Authorization: Bearer) or a session cookie is required")
        }
        guard let session = try Sessions.active(cookieHash: SHA256.hash(Array(cookie.utf8)), on: context.database) else {
            throw sessionEnded
        }
        if !["GET", "HEAD"].contains(request.method) {
            try checkOrigin(request, settings)
        }
        return (Principal(userID: session.userID, sessionID: session.sessionID, viaCookie: true), nil)
    }

    /// The answer to a request whose session was revoked, expired or deleted with its account.
    package static var sessionEnded: HTTPError { unauthorized("The session has ended; sign in again") }

    /// Refuses a cookie-authenticated write from another origin (or with no `Origin` at all).
    package static func checkOrigin(_ request: Request, _ settings: SessionSettings) throws {
        guard request.headers["origin"] == settings.publicURL else {
            throw HTTPError(403, "origin_mismatch", "Requests authenticated by cookie must come from \(settings.publicURL)")
        }
    }

    static func unauthorized(_ message: String) -> HTTPError { HTTPError(401, "invalid_token", message) }

    /// The value of cookie `name` in the request's `Cookie` header.
    package static func cookieValue(_ name: String, in request: Request) -> String? {
        guard let header = request.headers["cookie"] else { return nil }
        for pair in header.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    /// A `Set-Cookie` header for one of our `__Host-` cookies (HttpOnly, Secure, SameSite=Lax, Path=/).
    /// - Parameter maxAge: seconds; 0 deletes the cookie.
    package static func setCookie(_ name: String, _ value: String, maxAge: Int) -> (String, String) {
        ("Set-Cookie", "\(name)=\(value); Path=/; Max-Age=\(maxAge); Secure; HttpOnly; SameSite=Lax")
    }
}

/// A new random secret (refresh token, cookie, state, handle): 256 bits, base64url, with its SHA-256.
package struct OpaqueToken: Sendable {
    package let value: String
    package let hash: [UInt8]

    package init() throws {
        value = Base64URL.encode(try SecureRandom.bytes(count: 32))
        hash = SHA256.hash(Array(value.utf8))
    }

    /// The SHA-256 under which a presented token is looked up; nil when it cannot be one of ours.
    package static func hash(of presented: String) -> [UInt8]? {
        guard presented.utf8.count == 43, Base64URL.decode(presented) != nil else { return nil }
        return SHA256.hash(Array(presented.utf8))
    }
}

extension WorkerContext {
    /// The session settings, which `serve` requires; a 503 in a process started without them.
    package func requireSessions() throws -> SessionSettings {
        guard let sessions else { throw HTTPError(503, "not_configured", "Sessions are not configured on this server") }
        return sessions
    }

    /// The Apple services; a 503 in a process started without them.
    package func requireApple() throws -> AppleServices {
        guard let apple else { throw HTTPError(503, "not_configured", "Sign in with Apple is not configured on this server") }
        return apple
    }
}

extension Request {
    /// Decodes the JSON body as `T`.
    /// - Throws: 415 for another content type, 400 naming the first problem.
    package func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        try requireJSON()
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch DecodingError.keyNotFound(let key, let context) {
            throw HTTPError.badRequest("`\(Request.path(context.codingPath + [key]))` is required")
        } catch DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context) {
            throw HTTPError.badRequest("`\(Request.path(context.codingPath))` has the wrong type")
        } catch DecodingError.dataCorrupted(let context) where !context.codingPath.isEmpty {
            throw HTTPError.badRequest("`\(Request.path(context.codingPath))` is out of range")
        } catch {
            throw HTTPError.badRequest("The body is not a JSON object")
        }
    }

    /// - Throws: 415 when the body is declared as anything but JSON.
    package func requireJSON() throws {
        if let contentType = headers["content-type"], !contentType.lowercased().hasPrefix("application/json") {
            throw HTTPError(415, "unsupported_media_type", "Send the body as application/json")
        }
    }

    /// A coding path as a client writes it: `progress[3].status`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
        }
        return text
    }

    /// The fields of the query string (form encoding); nil when it is malformed.
    package var queryFields: [(String, String)]? { FormEncoding.fields(query) }
}

/// Length limits on client input (DESIGN.md rule 5).
package func limited(_ value: String?, _ name: String, maximum: Int) throws -> String? {
    guard let value else { return nil }
    guard value.utf8.count <= maximum else { throw HTTPError.badRequest("`\(name)` is longer than \(maximum) bytes") }
    return value
}
