import Accounts
import AppleID
package import FastCGI
import Foundation
import HTTPClient
import JOSE
import Logging
import MariaDB

/// The web flow with the Services ID (DESIGN.md section 4 and rule 6):
///
/// 1. `GET /auth/web/start?return_to=/path` keeps `state` and the nonce in MariaDB, bound to the
///    browser by a `__Host-` cookie, and redirects to Apple's authorize page.
/// 2. `POST /auth/callback` takes Apple's cross-site form post (which carries no SameSite=Lax
///    cookie), checks `state`, verifies the `id_token` with the stored nonce, exchanges the code,
///    keeps the outcome under a one-time handle and redirects (303) to our own site with it.
/// 3. `GET /auth/web/complete?handle=…`, now same-site, checks the binding cookie, sets the
///    session cookie and redirects to `return_to`. No token ever travels in a URL.
package enum WebSignIn {
    /// How long a started sign-in may take, in seconds.
    static let lifetime = 600

    package static func start(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let apple = try context.requireApple()
        let settings = try context.requireSessions()
        guard let servicesID = apple.settings.servicesID else {
            throw HTTPError(404, "not_configured", "Web sign-in needs SIWA_APPLE_SERVICES_ID")
        }
        guard let query = request.queryFields else { throw HTTPError.badRequest("The query string is malformed") }
        let returnTo = try sameSitePath(query.last { $0.0 == "return_to" }?.1 ?? "/")
        let state = try OpaqueToken(), binding = try OpaqueToken(), nonce = try OpaqueToken()
        try WebSignIns.start(
            stateHash: state.hash, bindingHash: binding.hash, nonce: nonce.value, returnTo: returnTo, lifetime: lifetime,
            on: context.database)
        // Apple puts the nonce parameter into the token as is; we send its SHA-256, as the native
        // apps do, so one verifier checks both.
        let fields = [
            ("response_type", "code id_token"), ("response_mode", "form_post"), ("client_id", servicesID),
            ("redirect_uri", settings.callbackURL), ("scope", "name email"), ("state", state.value),
            ("nonce", SHA256.hex(Array(nonce.value.utf8))),
        ]
        let authorizeQuery = fields.map { "\($0.0)=\(FormEncoding.encode($0.1).replacingOccurrences(of: "+", with: "%20"))" }
            .joined(separator: "&")
        let base = apple.settings.baseURL.hasSuffix("/") ? String(apple.settings.baseURL.dropLast()) : apple.settings.baseURL
        return Response(
            status: 302,
            headers: [
                ("Location", base + "/auth/authorize?" + authorizeQuery), ("Cache-Control", "no-store"),
                Authentication.setCookie(Authentication.bindingCookie, binding.value, maxAge: lifetime),
            ])
    }

    package static func callback(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let apple = try context.requireApple()
        let settings = try context.requireSessions()
        guard let form = FormEncoding.fields(String(decoding: request.body, as: UTF8.self)) else {
            return page(400, "The sign-in answer could not be read. Please start again.")
        }
        func field(_ name: String) -> String? { form.last { $0.0 == name }?.1 }
        guard let state = field("state"), let stateHash = OpaqueToken.hash(of: state),
            let pending = try WebSignIns.pending(stateHash: stateHash, on: context.database)
        else {
            context.logger.warning("web sign-in callback with an unknown or expired state")
            return page(400, "This sign-in is not valid or has expired. Please start again.")
        }
        let outcome: Outcome
        if let error = field("error") {
            outcome = .failed(String(error.filter { $0.isASCII && ($0.isLetter || $0 == "_") }.prefix(64)))
        } else {
            outcome = try signIn(form: field, pending: pending, apple: apple, settings: settings, context: context)
        }
        let handle = try OpaqueToken()
        try retryingConflicts {
            try context.database.transaction {
                guard try WebSignIns.pending(stateHash: stateHash, on: context.database) != nil else {
                    throw HTTPError(409, "already_completed", "This sign-in was already completed")
                }
                var account: SignedInAccount?
                if case .verified(let signIn, let nonceHash, let nonceExpiry) = outcome {
                    guard try Nonces.consume(hash: nonceHash, expiresAt: nonceExpiry, on: context.database) else {
                        throw NativeSignIn.nonceReused
                    }
                    account = try AppleAccounts.signIn(signIn, on: context.database)
                }
                var error: String?
                if case .failed(let code) = outcome { error = code }
                try WebSignIns.complete(
                    pending.id, handleHash: handle.hash, userID: account?.userID, isNewUser: account?.isNewUser ?? false, error: error,
                    on: context.database)
            }
        }
        return Response(
            status: 303,
            headers: [("Location", settings.publicURL + "/auth/web/complete?handle=" + handle.value), ("Cache-Control", "no-store")])
    }

    package static func complete(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let settings = try context.requireSessions()
        guard let handle = request.queryFields?.last(where: { $0.0 == "handle" })?.1, let handleHash = OpaqueToken.hash(of: handle) else {
            return page(400, "This sign-in link is not valid. Please start again.")
        }
        let bindingHash = SHA256.hash(Array((Authentication.cookieValue(Authentication.bindingCookie, in: request) ?? "").utf8))
        let cookie = try OpaqueToken()
        let clearBinding = Authentication.setCookie(Authentication.bindingCookie, "", maxAge: 0)
        let redemption = try context.database.transaction { () -> Redemption in
            // The handle is spent whatever follows; a wrong browser gets nothing from it.
            guard let completed = try WebSignIns.redeem(handleHash: handleHash, on: context.database) else { return .unknown }
            guard constantTimeEquals(bindingHash, completed.bindingHash) else { return .otherBrowser }
            guard completed.error == nil, let userID = completed.userID else {
                return .failed(returnTo: completed.returnTo, code: completed.error ?? "sign_in_failed")
            }
            let sessionID = try Sessions.create(
                userID: userID, device: "Web browser", refreshTokenHash: nil, cookieHash: cookie.hash, lifetime: settings.lifetime,
                on: context.database)
            try AuditLog.record(
                "sign_in", userID: userID, sessionID: sessionID, remoteAddress: request.remoteAddress,
                detail: JSONText.object([("flow", .string("web")), ("newUser", .bool(completed.isNewUser))]), on: context.database)
            return .signedIn(returnTo: completed.returnTo)
        }
        switch redemption {
        case .unknown:
            return page(400, "This sign-in link has expired or was already used. Please start again.")
        case .otherBrowser:
            context.logger.warning("web sign-in completed in another browser than the one that started it")
            return page(403, "This sign-in was started in another browser. Please start again here.", headers: [clearBinding])
        case .failed(let returnTo, let code):
            let separator = returnTo.contains("?") ? "&" : "?"
            return Response(
                status: 303, headers: [("Location", returnTo + separator + "sign_in_error=" + FormEncoding.encode(code)), clearBinding])
        case .signedIn(let returnTo):
            return Response(
                status: 303,
                headers: [
                    ("Location", returnTo), ("Cache-Control", "no-store"), clearBinding,
                    Authentication.setCookie(Authentication.sessionCookie, cookie.value, maxAge: settings.lifetime),
                ])
        }
    }

    /// What redeeming a handle led to.
    enum Redemption {
        case unknown
        case otherBrowser
        case failed(returnTo: String, code: String)
        case signedIn(returnTo: String)
    }

    // MARK: - Internals

    enum Outcome {
        case verified(AppleSignIn, nonceHash: [UInt8], nonceExpiry: Int64)
        /// An error code shown to the user on return (Apple's, or why we refused).
        case failed(String)
    }

    /// Verifies Apple's answer and exchanges the code; refusals become `.failed`, so the user gets
    /// back to the app with a message.
    static func signIn(
        form field: (String) -> String?, pending: WebSignIns.Pending, apple: AppleServices, settings: SessionSettings,
        context: WorkerContext
    ) throws -> Outcome {
        guard let idToken = field("id_token"), let code = field("code"), idToken.utf8.count <= 16_384, code.utf8.count <= 1024 else {
            return .failed("invalid_request")
        }
        let identity: IdentityToken
        do {
            identity = try apple.identityTokens.verify(idToken, nonce: pending.nonce, authorizationCode: code, now: Date().timeIntervalSince1970)
        } catch let error as SignInError where error.code != .keysUnavailable {
            context.logger.warning("web sign-in: identity token refused", metadata: ["reason": "\(error.code.rawValue)"])
            return .failed("invalid_token")
        }
        guard identity.audience == apple.settings.servicesID else { return .failed("invalid_token") }
        let sealed = try NativeSignIn.exchange(
            code, clientID: identity.audience, redirectURI: settings.callbackURL, context: context, apple: apple, settings: settings)
        // The `user` JSON comes only with a first authorization, and only the name is taken from it.
        let name = field("user").flatMap { try? JSONObject(parsing: String($0.prefix(4096))) }.flatMap { try? $0.object("name") }
        let signIn = AppleSignIn(
            teamID: apple.settings.teamID, sub: identity.subject, audience: identity.audience, email: identity.email,
            emailVerified: identity.emailVerified, isPrivateEmail: identity.isPrivateEmail, transferSub: identity.transferSubject,
            firstName: name.flatMap { try? $0.string("firstName") }, lastName: name.flatMap { try? $0.string("lastName") },
            appleRefreshToken: sealed)
        return .verified(
            signIn, nonceHash: SHA256.hash(Array(pending.nonce.utf8)),
            nonceExpiry: Int64(identity.expiresAt) + Int64(apple.settings.leeway) + 1)
    }

    /// `return_to` as a same-origin path: `/` followed by anything but `/` or `\` (so never
    /// `//host` or `/\host`), no control characters, at most 512 bytes.
    package static func sameSitePath(_ value: String) throws -> String {
        let valid =
            value.hasPrefix("/") && !value.hasPrefix("//") && !value.hasPrefix("/\\") && value.utf8.count <= 512
            && !value.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == " " }
        guard valid else { throw HTTPError.badRequest("`return_to` must be a path on this site, such as /account") }
        return value
    }

    /// A small HTML page for the browser.
    static func page(_ status: Int, _ message: String, headers: [(String, String)] = []) -> Response {
        let escaped = message.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in</title>
            <meta name="viewport" content="width=device-width, initial-scale=1"></head>
            <body><main><h1>Sign in with Apple</h1><p id="message">\(escaped)</p><p><a href="/">Back</a></p></main></body></html>
            """
        return Response(status: status, contentType: "text/html; charset=utf-8", headers: headers + [("Cache-Control", "no-store")], body: Array(html.utf8))
    }
}
