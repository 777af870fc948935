import AccountData
import Accounts
import Foundation
import JOSE
import Logging
import MariaDB
import StrictJSON
import WebForms

/// A native app that is neither iOS nor Android (a desktop app, a TV app, a command-line tool) signs
/// in through the system browser (RFC 8252, with PKCE, RFC 7636):
///
/// 1. `startAppSignIn`: the app opens `GET /auth/app/start` with its registered client id and
///    redirect URI, the S256 `code_challenge` and its `state`; the browser goes through Apple and
///    the callback as in the web flow (`SignInUseCases+Web.swift`), in the same row.
/// 2. `redeemWebSignIn` then sends the browser to the app's redirect URI with a one-time code
///    (60 s) and the app's `state`, instead of opening a cookie session.
/// 3. `exchangeAppCode`: the app posts the code with its `code_verifier` to `POST /auth/token`
///    and gets the grant a native sign-in gets. The code is spent by its first presentation with a
///    registered client and a well-formed verifier; presented again, it ends the session it opened.
extension SignInUseCases {
    /// Seconds an app's one-time code can be exchanged.
    package static let appCodeLifetime = 60

    /// The longest `state` an app may send, in bytes: it comes back in the redirect to the app,
    /// percent-encoded (at most three times as long).
    package static let maximumAppStateBytes = 512

    /// What the start of an app's sign-in leads to.
    package enum AppSignInStart: Sendable {
        /// To Apple, with the binding cookie.
        case authorize(WebSignInStart)
        /// The client or its redirect URI is not registered (RFC 6749 §4.1.2.1), or the app's
        /// `state` is too long to be sent back: a page, never a redirect to the URI.
        case refused(String)
        /// Anything else wrong: back to the app's redirect URI with `error` (and `state`).
        case redirect(String)
    }

    /// Starts an app's sign-in (step 1).
    package func startAppSignIn(
        clientID: String?, redirectURI: String?, codeChallenge: String?, challengeMethod: String?, state: String?
    ) throws -> AppSignInStart {
        let settings = try requireSessions()
        guard let clientID, let registered = settings.appClients[clientID] else {
            return .refused("This app is not registered with this server (client_id).")
        }
        guard let redirectURI, registered.contains(where: { $0.matches(redirectURI) }) else {
            return .refused("The app's redirect_uri is not one registered for it.")
        }
        // A state that cannot go back to the app is not sent back at all: the app would not
        // recognise an answer without it, and a redirect must not carry what was refused.
        guard (state ?? "").utf8.count <= Self.maximumAppStateBytes else {
            return .refused("The app's state is longer than \(Self.maximumAppStateBytes) bytes.")
        }
        func back(_ description: String) -> AppSignInStart {
            var fields = [("error", "invalid_request"), ("error_description", description)]
            if let state, !state.isEmpty { fields.append(("state", state)) }
            return .redirect(AppURIs.adding(fields, to: redirectURI))
        }
        guard let state, !state.isEmpty else { return back("state is required, at most \(Self.maximumAppStateBytes) bytes") }
        guard challengeMethod == "S256" else { return back("code_challenge_method must be S256") }
        guard let codeChallenge, codeChallenge.utf8.count == 43, let challenge = Base64URL.decode(codeChallenge), challenge.count == 32
        else { return back("code_challenge must be the base64url SHA-256 of the code_verifier, 43 characters") }
        let app = WebSignIns.AppRequest(clientID: clientID, redirectURI: redirectURI, state: state, codeChallenge: challenge)
        return .authorize(try startBrowserSignIn(returnTo: "/", app: app))
    }

    /// Step 2, in the redemption's transaction: a one-time code for a sign-in that signed someone
    /// in, otherwise the error of RFC 6749 §4.1.2.1: `temporarily_unavailable` when Apple failed,
    /// `server_error` when Apple refused this server's credentials, `access_denied` (with Apple's
    /// or our code as the description) when the person or Apple refused.
    func redeemApp(_ completed: WebSignIns.Completed, app: WebSignIns.AppRequest, on connection: Connection) throws -> WebRedemption {
        guard completed.error == nil, completed.userID != nil else {
            let (error, description) =
                switch completed.error {
                case WebSignInFailure.appleUnavailable.code?: ("temporarily_unavailable", "Apple could not be reached; try again shortly")
                case WebSignInFailure.appleRefusedCredentials.code?: ("server_error", "Apple refused the server's credentials")
                case let code?: ("access_denied", code)
                case nil: ("access_denied", "sign_in_failed")
                }
            return .app(
                location: AppURIs.adding(
                    [("error", error), ("error_description", description), ("state", app.state)], to: app.redirectURI),
                signedIn: false)
        }
        let code = try OpaqueToken()
        try WebSignIns.issueCode(completed.id, codeHash: code.hash, lifetime: Self.appCodeLifetime, on: connection)
        return .app(location: AppURIs.adding([("code", code.value), ("state", app.state)], to: app.redirectURI), signedIn: true)
    }

    /// The app's token request (`POST /auth/token`), as received.
    package struct AppTokenRequest: Sendable {
        package var clientID: String?
        package var code: String?
        package var codeVerifier: String?
        package var redirectURI: String?

        package init(clientID: String?, code: String?, codeVerifier: String?, redirectURI: String?) {
            self.clientID = clientID
            self.code = code
            self.codeVerifier = codeVerifier
            self.redirectURI = redirectURI
        }
    }

    /// Step 3: exchanges an app's code for a session. A call by a registered client with a
    /// well-formed verifier spends the code whatever its outcome, so that a wrong verifier cannot be
    /// tried again.
    /// A code presented again also ends the session its first presentation opened (RFC 6749
    /// §4.1.2).
    /// - Throws: `IdentityError(.appTokenRequestInvalid)` for a missing or malformed parameter,
    ///   `.appClientUnknown` for a client that is not registered, `.appCodeRefused` for a code that
    ///   is unknown, spent, expired, another client's, for another redirect URI, or whose verifier
    ///   does not match; `.userDisabled`.
    package func exchangeAppCode(_ request: AppTokenRequest, remoteAddress: String?) throws -> Grant {
        try core.metrics.counting(core.metrics.signIns, ["app"], success: "success") {
            try exchangeAppCodeOnce(request, remoteAddress: remoteAddress)
        }
    }

    private func exchangeAppCodeOnce(_ request: AppTokenRequest, remoteAddress: String?) throws -> Grant {
        let settings = try requireSessions()
        let servicesID = try requireApple().settings.servicesID
        guard let clientID = request.clientID, let code = request.code, let verifier = request.codeVerifier,
            let redirectURI = request.redirectURI
        else {
            throw IdentityError(.appTokenRequestInvalid, "client_id, code, code_verifier and redirect_uri are required")
        }
        guard verifier.range(of: "^[A-Za-z0-9._~-]{43,128}$", options: .regularExpression) != nil else {
            throw IdentityError(.appTokenRequestInvalid, "code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'")
        }
        guard settings.appClients[clientID] != nil else { throw IdentityError(.appClientUnknown, "client_id is not registered") }
        guard let codeHash = OpaqueToken.hash(of: code) else { throw IdentityError(.appCodeRefused, "the code is not valid") }
        let session = try SessionOpening(flow: "app", credential: .refreshToken)
        // One transaction spends the code and opens its session: a second presentation waits on the
        // code's row until the first one's session is recorded there. A refusal commits the spend.
        let use = try retryingConflicts {
            try transaction { connection -> AppCodeUse in
                guard let issued = try WebSignIns.useCode(codeHash: codeHash, on: connection) else {
                    return .refused(IdentityError(.appCodeRefused, "the code is not valid"))
                }
                guard !issued.used else { return .presentedAgain(issued) }
                if let refusal = Self.refusal(of: issued, clientID: clientID, redirectURI: redirectURI, verifier: verifier) {
                    return .refused(refusal)
                }
                let sessionID: UInt64
                do {
                    // Never `userIsNew`: a user the browser step made was made by its own
                    // transaction, and may have been disabled since.
                    sessionID = try openSession(
                        session, userID: issued.userID, appleClientID: servicesID, device: clientID, userIsNew: false,
                        remoteAddress: remoteAddress, detail: [("client", .string(clientID))], on: connection)
                } catch is AccountDisabled {
                    return .refused(IdentityError(.userDisabled))
                }
                try WebSignIns.recordCodeSession(issued.id, sessionID: sessionID, on: connection)
                return .opened(issued, sessionID: sessionID)
            }
        }
        let issued: WebSignIns.AppCode
        let sessionID: UInt64
        switch use {
        case .refused(let error):
            throw error
        case .presentedAgain(let issued):
            // RFC 6749 §4.1.2: a code presented twice may have been stolen; the session it opened ends.
            if let sessionID = issued.sessionID, try endSession(sessionID, of: issued.userID, reason: "code_reused") {
                logger.warning(
                    "an app's code presented again: the session it opened was revoked",
                    metadata: ["user": "\(issued.userID)", "session": "\(sessionID)"])
            }
            throw IdentityError(.appCodeRefused, "the code was already used; the session it opened has ended")
        case .opened(let opened, let id):
            (issued, sessionID) = (opened, id)
        }
        guard let profile = try Profile.load(userID: issued.userID, on: database) else { throw IdentityError(.accountGone) }
        return try grant(session, userID: issued.userID, sessionID: sessionID, profile: profile, isNewUser: issued.isNewUser)
    }

    /// What presenting an app's code did, decided in the transaction that spends it.
    private enum AppCodeUse {
        case refused(IdentityError)
        case presentedAgain(WebSignIns.AppCode)
        case opened(WebSignIns.AppCode, sessionID: UInt64)
    }

    /// Why a code presented for the first time is refused, or nil when it opens a session.
    private static func refusal(of issued: WebSignIns.AppCode, clientID: String, redirectURI: String, verifier: String) -> IdentityError? {
        guard !issued.expired else { return IdentityError(.appCodeRefused, "the code has expired (it is valid \(appCodeLifetime) s)") }
        guard issued.app.clientID == clientID else { return IdentityError(.appCodeRefused, "the code was issued to another client") }
        guard issued.app.redirectURI == redirectURI else {
            return IdentityError(.appCodeRefused, "redirect_uri is not the one of the authorization request")
        }
        guard constantTimeEquals(SHA256.hash(Array(verifier.utf8)), issued.app.codeChallenge) else {
            return IdentityError(.appCodeRefused, "code_verifier does not match the code_challenge")
        }
        return nil
    }
}

/// Apple's form post for an app that opened Apple's web authorization itself (Android, Flutter),
/// relayed to the app (`AppCallbackTarget`).
extension SignInUseCases {
    /// The fields of Apple's form post an app gets, in the order Apple sent them, with the most
    /// bytes each may have: the code, the identity token, the app's `state`, the first
    /// authorization's `user` JSON, or Apple's `error`. Each is a few times what Apple sends (a code
    /// of about 100 characters, an identity token of about 1,000), so that the redirect that
    /// carries them stays far below the 32 KiB header buffer `nginx/siwa-locations.conf` gives
    /// siwa's answers: under 12 KB with every field at its limit, `state` and `user` (any text)
    /// percent-encoded at three bytes for each of theirs, the others URL-safe as Apple's are.
    package static let relayedFields: [String: Int] = [
        "code": 1024, "id_token": 3072, "state": 512, "user": 2048, "error": 64,
    ]

    /// What relaying Apple's form post to an app leads to.
    package enum AppCallbackRelay: Sendable, Equatable {
        /// The redirect to the app's configured target with Apple's fields.
        case redirect(String)
        /// No app of that name is configured.
        case unknownApp
        /// The form is not Apple's answer; the reason, which never repeats the form's values.
        case refused(String)
    }

    /// Relays Apple's form post for the app `name` to it: the redirect to its configured target with
    /// Apple's fields, unchanged. The form must be Apple's answer: a `code` and an `id_token`, or an
    /// `error`, with `state` and `user` optional, each at most once and within its size
    /// (`relayedFields`), the code, the token and the error URL-safe as Apple's are; other fields
    /// are dropped. Nothing is verified or stored here: the app signs in with them through
    /// `POST /auth/apple`, which checks everything.
    package func relayAppCallback(app name: String, form: [(String, String)]) throws -> AppCallbackRelay {
        guard let target = try requireApple().settings.appCallbacks[name] else { return .unknownApp }
        guard let seen = FormEncoding.distinct(form, among: Set(Self.relayedFields.keys)) else {
            return .refused("Apple's answer repeats a field.")
        }
        for (name, value) in seen {
            guard value.utf8.count <= Self.relayedFields[name, default: 0] else {
                return .refused("Apple's answer has a field longer than Apple sends.")
            }
            guard ["state", "user"].contains(name) || value.utf8.allSatisfy(Self.isURLSafe) else {
                return .refused("Apple's answer has a code, identity token or error that is not one of Apple's.")
            }
        }
        let signedIn = !(seen["code"] ?? "").isEmpty && !(seen["id_token"] ?? "").isEmpty
        guard signedIn || !(seen["error"] ?? "").isEmpty else {
            return .refused("Apple's answer has neither a code with an identity token nor an error.")
        }
        return .redirect(target.location(carrying: form.filter { seen[$0.0] != nil }))
    }

    /// Base64url's alphabet and `.`: the characters of Apple's codes, identity tokens and error codes.
    private static func isURLSafe(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
