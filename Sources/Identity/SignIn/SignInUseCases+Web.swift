import Accounts
import AppleID
import CoreMetrics
import Foundation
import HTTPClient
import JOSE
import Logging
import MariaDB
import StrictJSON
import Telemetry
import WebForms

/// The web flow with the Services ID, in three steps:
///
/// 1. `startWebSignIn` keeps `state` and the nonce in MariaDB, bound to the browser by a cookie,
///    and gives Apple's authorize URL.
/// 2. `completeWebCallback` takes Apple's cross-site form post (which carries no SameSite=Lax
///    cookie), checks `state`, verifies the `id_token` with the stored nonce, exchanges the code,
///    and keeps the outcome under a one-time handle.
/// 3. `redeemWebSignIn`, now same-site, checks the binding cookie and opens the session. No token
///    ever travels in a URL.
extension SignInUseCases {
    /// How long a started web sign-in may take, in seconds.
    package static let webSignInLifetime = 600

    /// A started web sign-in: where to send the browser, and the binding cookie's value.
    package struct WebSignInStart: Sendable {
        package var authorizeURL: String
        package var binding: String
    }

    /// Starts a web sign-in that returns to `returnTo` (a same-site path, checked by the caller).
    package func startWebSignIn(returnTo: String) throws -> WebSignInStart {
        try startBrowserSignIn(returnTo: returnTo, app: nil)
    }

    /// Starts a sign-in in the browser: the web's, or a native app's (`app`, see `SignInUseCases+App.swift`).
    func startBrowserSignIn(returnTo: String, app: WebSignIns.AppRequest?) throws -> WebSignInStart {
        let apple = try requireApple()
        let settings = try requireSessions()
        guard let servicesID = apple.settings.servicesID else {
            throw IdentityError(.webSignInNotConfigured, "web sign-in needs SIWA_APPLE_SERVICES_ID")
        }
        let state = try OpaqueToken()
        let binding = try OpaqueToken()
        let nonce = try OpaqueToken()
        try WebSignIns.start(
            stateHash: state.hash, bindingHash: binding.hash, nonce: nonce.value, returnTo: returnTo, app: app,
            lifetime: Self.webSignInLifetime, on: database)
        // Apple puts the nonce parameter into the token as is; we send its SHA-256, as the native
        // apps do, so one verifier checks both.
        let fields = [
            ("response_type", "code id_token"), ("response_mode", "form_post"), ("client_id", servicesID),
            ("redirect_uri", settings.callbackURL), ("scope", "name email"), ("state", state.value),
            ("nonce", SHA256.hex(Array(nonce.value.utf8))),
        ]
        let query = fields.map { "\($0.0)=\(FormEncoding.encode($0.1).replacingOccurrences(of: "+", with: "%20"))" }
            .joined(separator: "&")
        let base = apple.settings.baseURL.hasSuffix("/") ? String(apple.settings.baseURL.dropLast()) : apple.settings.baseURL
        return WebSignInStart(authorizeURL: base + "/auth/authorize?" + query, binding: binding.value)
    }

    /// Apple's form post to the callback, as received.
    package struct WebCallback: Sendable {
        package var state: String?
        package var error: String?
        package var identityToken: String?
        package var code: String?
        /// The `user` JSON, sent only with a first authorization.
        package var user: String?

        package init(state: String?, error: String?, identityToken: String?, code: String?, user: String?) {
            self.state = state
            self.error = error
            self.identityToken = identityToken
            self.code = code
            self.user = user
        }
    }

    /// Handles Apple's answer to a started web sign-in and keeps its outcome (signed in, or why
    /// not) under a new one-time handle.
    /// - Returns: the handle; nil when `state` names no pending sign-in.
    /// - Throws: `IdentityError(.alreadyCompleted)` when a concurrent callback finished it first,
    ///   `.nonceReused`, and Apple's failures to take the code.
    package func completeWebCallback(_ callback: WebCallback) throws -> String? {
        // A callback that leaves a handle is counted when the browser redeems it.
        do {
            guard let handle = try completeWebCallbackOnce(callback) else {
                core.metrics.signIns["web", "unknown_state"].increment()
                return nil
            }
            return handle
        } catch {
            core.metrics.signIns["web", IdentityMetrics.code(of: error)].increment()
            throw error
        }
    }

    private func completeWebCallbackOnce(_ callback: WebCallback) throws -> String? {
        let apple = try requireApple()
        let settings = try requireSessions()
        guard let state = callback.state, let stateHash = OpaqueToken.hash(of: state),
            let pending = try WebSignIns.pending(stateHash: stateHash, on: database)
        else {
            logger.warning("web sign-in callback with an unknown or expired state")
            return nil
        }
        var outcome: Result<VerifiedSignIn, WebSignInFailure>
        if let error = callback.error {
            // Apple's code goes back to the page (`sign_in_error`) or the app (`error_description`)
            // as it is, or not at all: anything but a short code of letters and `_` is ours.
            let isCode = (1...64).contains(error.utf8.count) && error.allSatisfy { $0.isASCII && ($0.isLetter || $0 == "_") }
            outcome = .failure(WebSignInFailure(code: isCode ? error : "invalid_request"))
        } else if let idToken = callback.identityToken, let code = callback.code, idToken.utf8.count <= 16_384, code.utf8.count <= 1024 {
            // Only the name is taken from the `user` JSON.
            let name = callback.user.flatMap { try? JSONObject(parsing: String($0.prefix(4096))) }.flatMap { try? $0.object("name") }
            let attempt = SignInAttempt(
                identityToken: idToken, authorizationCode: code, nonce: pending.nonce,
                firstName: name.flatMap { try? $0.string("firstName") }, lastName: name.flatMap { try? $0.string("lastName") })
            do {
                outcome = .success(try verify(attempt, audience: apple.settings.servicesID, redirectURI: .fixed(settings.callbackURL)))
            } catch let error as SignInError where error.code != .keysUnavailable {
                logger.warning("web sign-in: identity token refused", metadata: ["reason": "\(error.code.rawValue)"])
                outcome = .failure(WebSignInFailure(code: "invalid_token"))
            } catch {
                // An app waits at its redirect URI: Apple failing or refusing sends it back there
                // with an error (RFC 6749 §4.1.2.1), where the web shows a page to retry from.
                guard pending.isApp, let failure = Self.appExchangeFailure(error) else { throw error }
                logger.warning("app sign-in: the code exchange failed", metadata: ["reason": "\(failure.code)"])
                outcome = .failure(failure)
            }
        } else {
            outcome = .failure(WebSignInFailure(code: "invalid_request"))
        }
        let handle = try OpaqueToken()
        do {
            try store(outcome, pending: pending, stateHash: stateHash, handle: handle)
        } catch let error as IdentityError where error.code == .alreadyCompleted {
            // A second callback of one sign-in: its exchange's token is not kept.
            if case .success(let verified) = outcome, let token = verified.signIn.appleRefreshToken {
                revokeUnkept(token, subject: verified.signIn.sub)
            }
            throw error
        }
        return handle.value
    }

    /// Stores a callback's outcome on its pending web sign-in, in one transaction.
    private func store(
        _ outcome: Result<VerifiedSignIn, WebSignInFailure>, pending: WebSignIns.Pending, stateHash: [UInt8], handle: OpaqueToken
    ) throws {
        try retryingConflicts {
            try NonceClaim.refusingReuse {
                try transaction { connection in
                    guard try WebSignIns.pending(stateHash: stateHash, on: connection) != nil else {
                        throw IdentityError(.alreadyCompleted, "this sign-in was already completed")
                    }
                    switch outcome {
                    case .success(let verified):
                        let account = try AppleAccounts.signIn(verified.signIn, newUserID: { try newID(.users) }, on: connection)
                        try verified.unclaimedNonce?.claim(in: connection)
                        try WebSignIns.complete(
                            pending.id, handleHash: handle.hash, userID: account.userID, isNewUser: account.isNewUser, error: nil,
                            on: connection)
                        try reportIfCreated(account, verified.signIn, flow: "web", on: connection)
                        try reportIfLinked(account, link: nil, on: connection)
                    case .failure(let failure):
                        try WebSignIns.complete(
                            pending.id, handleHash: handle.hash, userID: nil, isNewUser: false, error: failure.code, on: connection)
                    }
                }
            }
        }
    }

    /// Why a web sign-in did not sign in: Apple's error code, or ours; shown to the user on return.
    struct WebSignInFailure: Error {
        let code: String

        /// Apple could not be reached or failed (an app is sent `temporarily_unavailable`).
        static let appleUnavailable = WebSignInFailure(code: "temporarily_unavailable")
        /// Apple refused this server's credentials (an app is sent `server_error`).
        static let appleRefusedCredentials = WebSignInFailure(code: "server_error")
    }

    /// An app's sign-in that the code exchange failed, as the failure kept for the app; nil for
    /// an error that is not the exchange's (the database's), which the callback answers.
    static func appExchangeFailure(_ error: any Error) -> WebSignInFailure? {
        if let error = error as? SignInError, error.code == .keysUnavailable { return .appleUnavailable }
        guard let error = error as? IdentityError else { return nil }
        switch error.code {
        case .appleUnavailable: return .appleUnavailable
        case .appleRefusedCredentials: return .appleRefusedCredentials
        case .codeRefused: return WebSignInFailure(code: "code_refused")
        case .codeMismatch: return WebSignInFailure(code: "code_mismatch")
        case .nonceReused: return WebSignInFailure(code: "nonce_reused")
        default: return nil
        }
    }

    /// What redeeming a web sign-in's handle led to.
    package enum WebRedemption: Sendable, Equatable {
        /// No such handle, or it was already redeemed or expired.
        case unknown
        /// The handle was redeemed by another browser than the one that started the sign-in.
        case otherBrowser
        /// The sign-in failed; `code` says why.
        case failed(returnTo: String, code: String)
        /// A session was opened: `cookie` is its secret.
        case signedIn(returnTo: String, cookie: String)
        /// A native app's sign-in: back to its redirect URI, with a one-time code or an error.
        case app(location: String, signedIn: Bool)
    }

    /// Redeems a completed web sign-in's handle in the browser whose binding cookie is `binding`,
    /// opening a cookie session labelled `device` (the browser, for the device list) when it signed
    /// someone in. The handle is spent whatever follows.
    package func redeemWebSignIn(handle: String, binding: String?, device: String, remoteAddress: String?) throws -> WebRedemption {
        _ = try requireSessions()
        // Web sign-ins are verified for the Services ID only: their sessions depend on its token.
        let servicesID = try requireApple().settings.servicesID
        guard let handleHash = OpaqueToken.hash(of: handle) else { return .unknown }
        let bindingHash = SHA256.hash(Array((binding ?? "").utf8))
        let session = try SessionOpening(flow: "web", credential: .cookie)
        let redemption = try retryingConflicts {
            try transaction { (connection: Connection) -> WebRedemption in
                try redeem(
                    handleHash: handleHash, bindingHash: bindingHash, session: session, servicesID: servicesID,
                    device: device, remoteAddress: remoteAddress, on: connection)
            }
        }
        if redemption == .otherBrowser {
            logger.warning("web sign-in completed in another browser than the one that started it")
        }
        core.metrics.signIns["web", redemption.metricLabel].increment()
        return redemption
    }

    /// The redemption's transaction.
    private func redeem(
        handleHash: [UInt8], bindingHash: [UInt8], session: SessionOpening, servicesID: String?, device: String,
        remoteAddress: String?, on connection: Connection
    ) throws -> WebRedemption {
        guard let completed = try WebSignIns.redeem(handleHash: handleHash, on: connection) else { return .unknown }
        guard constantTimeEquals(bindingHash, completed.bindingHash) else { return .otherBrowser }
        if let app = completed.app { return try redeemApp(completed, app: app, on: connection) }
        guard completed.error == nil, let userID = completed.userID else {
            return .failed(returnTo: completed.returnTo, code: completed.error ?? "sign_in_failed")
        }
        do {
            _ = try openSession(
                session, userID: userID, appleClientID: servicesID, device: device, userIsNew: false, remoteAddress: remoteAddress,
                detail: [("newUser", .bool(completed.isNewUser))], on: connection)
        } catch is AccountDisabled {
            // Nothing was written but the spent handle, which stays spent.
            return .failed(returnTo: completed.returnTo, code: "user_disabled")
        }
        return .signedIn(returnTo: completed.returnTo, cookie: session.cookie)
    }
}
