import Foundation
import JOSE
import StrictJSON

/// What an identity token must satisfy besides its signature.
package struct IdentityTokenPolicy: Sendable {
    /// Apple's issuer, pinned: never taken from the discovery document, which once said otherwise
    /// (docs/APPLE-PROTOCOL.md §4).
    package static let issuer = "https://appleid.apple.com"
    /// The most clock skew ever tolerated, in seconds.
    package static let maximumLeeway = 60

    /// The accepted audiences: the app's bundle ids and the web Services ID.
    package var clientIDs: Set<String>
    /// Clock skew tolerated on `exp`, `iat` and `nbf`, in seconds (0...60).
    package var leeway: Int
    /// Whether every sign-in must carry a nonce. When false, a nonce is still checked whenever the
    /// client sends one, and required whenever the token says `nonce_supported`.
    package var requireNonce: Bool

    package init(clientIDs: Set<String>, leeway: Int = 60, requireNonce: Bool = true) {
        precondition((0...Self.maximumLeeway).contains(leeway), "leeway must be 0...60 s")
        self.clientIDs = clientIDs
        self.leeway = leeway
        self.requireNonce = requireNonce
    }
}

/// A verified Sign in with Apple identity token: only what the server may rely on.
package struct IdentityToken: Sendable, Equatable {
    /// The stable user id for the developer team (`sub`).
    package var subject: String
    /// The client id the token was issued to (`aud`).
    package var audience: String
    package var issuedAt: Double
    package var expiresAt: Double
    /// The `kid` of the Apple key that signed it.
    package var keyID: String
    /// May be absent (no email scope, Work & School accounts) and is never an identifier.
    package var email: String?
    /// Kept exactly as Apple says: false for unverified Work & School addresses.
    package var emailVerified: Bool?
    package var isPrivateEmail: Bool?
    package var nonceSupported: Bool?
    /// 0 unsupported, 1 unknown, 2 likely real (native iOS 14+, first sign-in only).
    package var realUserStatus: Int?
    /// Present for 60 days after an app transfer between teams.
    package var transferSubject: String?
    package var authTime: Double?
}

/// The result of verifying a token step by step, for `siwa verify-token`.
package struct VerificationReport: Sendable {
    package var steps: [VerificationStep]
    /// Set only when every check passed.
    package var identity: IdentityToken?
    package var passed: Bool { identity != nil && !steps.contains { $0.failed } }
}

/// Verifies Apple identity tokens: the signature through `AppleJWSVerifier`, then the claims in a
/// fixed order: `iss`, `aud`, `exp`, `iat`, `nbf`, `sub`, claim types, nonce, `c_hash`.
package struct IdentityTokenVerifier: Sendable {
    package let policy: IdentityTokenPolicy
    let signatures: AppleJWSVerifier

    package init(keys: any AppleKeySource, policy: IdentityTokenPolicy) {
        self.policy = policy
        self.signatures = AppleJWSVerifier(keys: keys)
    }

    /// Verifies `token` and returns its identity.
    /// - Parameters:
    ///   - nonce: the raw nonce the client sent; the token's `nonce` claim must be its lowercase
    ///     hex SHA-256.
    ///   - authorizationCode: the code sent with the token; checked against `c_hash` when present.
    ///   - now: the current time in Unix seconds (injected, so tests use each token's own clock).
    /// - Throws: `SignInError` for the first rule the token breaks.
    package func verify(_ token: some StringProtocol, nonce: String?, authorizationCode: String? = nil, now: Double) throws -> IdentityToken
    {
        let (payload, keyID) = try signatures.verifiedClaims(token)
        let context = ClaimContext(
            claims: IdentityClaims(payload), policy: policy, now: now, nonce: nonce, code: authorizationCode, recording: false)
        for check in Self.claimChecks { _ = try check.body(context) }
        return try Self.identity(from: context, keyID: keyID)
    }

    /// Runs every check and records each outcome. Checks of the claims run even after a failure
    /// (the report shows all that is wrong), but the result is only `passed` if all passed.
    package func report(_ token: some StringProtocol, nonce: String?, authorizationCode: String? = nil, now: Double) -> VerificationReport {
        var runner = StepRunner(recording: true)
        var payload: JSONObject?
        var keyID = ""
        do {
            (payload, keyID) = try signatures.verifiedClaims(token, runner: &runner)
        } catch {
            // The claims are still checked for the report, never trusted.
            payload = (try? CompactJWS(token)).flatMap { try? $0.decodePayload() }
        }
        var identity: IdentityToken?
        if let payload {
            let context = ClaimContext(
                claims: IdentityClaims(payload), policy: policy, now: now, nonce: nonce, code: authorizationCode, recording: true)
            for check in Self.claimChecks {
                try? runner.run(check.name) { _ in try check.body(context) }
            }
            if !runner.steps.contains(where: { $0.failed }) {
                identity = try? Self.identity(from: context, keyID: keyID)
            }
        }
        return VerificationReport(steps: runner.steps, identity: identity)
    }

    /// The identity of claims that passed every check.
    private static func identity(from context: ClaimContext, keyID: String) throws -> IdentityToken {
        IdentityToken(
            subject: try context.claims.subject.get() ?? "",
            audience: context.claims.audience ?? "",
            issuedAt: try context.claims.issuedAt.get() ?? 0,
            expiresAt: try context.claims.expiresAt.get() ?? 0,
            keyID: keyID,
            email: try context.claims.email.get(),
            emailVerified: try context.claims.emailVerified.get(),
            isPrivateEmail: try context.claims.isPrivateEmail.get(),
            nonceSupported: try context.claims.nonceSupported.get(),
            realUserStatus: try context.claims.realUserStatus.get(),
            transferSubject: try context.claims.transferSubject.get(),
            authTime: try context.claims.authTime.get())
    }

    /// What the claim checks read. A class: each check gets a reference, where a struct this size
    /// (fifteen claims, each a value or its error) was copied into every check's call.
    final class ClaimContext {
        let claims: IdentityClaims
        let policy: IdentityTokenPolicy
        let now: Double
        let nonce: String?
        let code: String?
        /// Whether the outcome text is wanted (for the report); verification skips formatting it.
        let recording: Bool

        init(claims: IdentityClaims, policy: IdentityTokenPolicy, now: Double, nonce: String?, code: String?, recording: Bool) {
            self.claims = claims
            self.policy = policy
            self.now = now
            self.nonce = nonce
            self.code = code
            self.recording = recording
        }
    }

    struct ClaimCheck: Sendable {
        let name: String
        let body: @Sendable (ClaimContext) throws -> String
    }

    /// The claim checks, in order.
    static let claimChecks: [ClaimCheck] = [
        ClaimCheck(name: "iss") { context in
            guard try context.claims.issuer.get() == IdentityTokenPolicy.issuer else {
                throw SignInError(.issuerMismatch, "iss must be exactly \(IdentityTokenPolicy.issuer)")
            }
            return IdentityTokenPolicy.issuer
        },
        ClaimCheck(name: "aud") { context in
            guard let audience = context.claims.audience, context.policy.clientIDs.contains(audience) else {
                throw SignInError(.audienceMismatch, "aud is not one of the configured client ids")
            }
            return audience
        },
        ClaimCheck(name: "exp") { context in
            guard let exp = try context.claims.expiresAt.get() else { throw SignInError(.expired, "exp is missing") }
            // RFC 7519 §4.1.4: the token is expired on or after exp (plus the leeway).
            guard context.now < exp + Double(context.policy.leeway) else {
                throw SignInError(.expired, "expired at \(timestamp(exp)) (leeway \(context.policy.leeway) s)")
            }
            return context.recording ? "expires \(timestamp(exp))" : ""
        },
        ClaimCheck(name: "iat") { context in
            guard let iat = try context.claims.issuedAt.get() else { throw SignInError(.invalidClaim, "iat is missing") }
            guard iat <= context.now + Double(context.policy.leeway) else {
                throw SignInError(.issuedInFuture, "issued at \(timestamp(iat)), in the future")
            }
            return context.recording ? "issued \(timestamp(iat))" : ""
        },
        ClaimCheck(name: "nbf") { context in
            guard let nbf = try context.claims.notBefore.get() else { return "absent" }
            guard nbf <= context.now + Double(context.policy.leeway) else {
                throw SignInError(.notYetValid, "not valid before \(timestamp(nbf))")
            }
            return context.recording ? "valid since \(timestamp(nbf))" : ""
        },
        ClaimCheck(name: "sub") { context in
            guard let subject = try context.claims.subject.get(), !subject.isEmpty else {
                throw SignInError(.missingSubject, "sub is missing or empty")
            }
            return context.recording ? subject : ""
        },
        ClaimCheck(name: "claim types") { context in
            try context.claims.checkTypes()
            return "email, email_verified, is_private_email, nonce_supported, real_user_status, transfer_sub"
        },
        ClaimCheck(name: "nonce") { context in
            let claim = try context.claims.nonce.get()
            let supported = try context.claims.nonceSupported.get() ?? false
            guard let raw = context.nonce else {
                if context.policy.requireNonce { throw SignInError(.nonceMissing, "no nonce was sent with the token") }
                return "not checked: no nonce given"
            }
            guard let claim else {
                if context.policy.requireNonce || supported {
                    throw SignInError(.nonceMissing, "the token carries no nonce claim")
                }
                return "the token carries no nonce and nonce_supported is not true"
            }
            // The claim is the lowercase hex SHA-256 of the raw nonce; compared in constant time.
            guard SHA256.isHexDigest(claim.utf8, of: raw.utf8) else {
                throw SignInError(.nonceMismatch, "nonce is not the SHA-256 of the nonce sent")
            }
            return "SHA-256 of the nonce sent"
        },
        ClaimCheck(name: "c_hash") { context in
            guard let code = context.code else { return "not checked: no authorization code given" }
            guard let claim = try context.claims.codeHash.get() else { return "not checked: no c_hash claim" }
            // OpenID Connect Core §3.3.2.11: base64url of the left half of SHA-256 of the code.
            let expected = Base64URL.encode(SHA256.hash(Array(code.utf8)).prefix(16))
            guard constantTimeEquals(expected.utf8, claim.utf8) else {
                throw SignInError(.codeHashMismatch, "c_hash does not match the authorization code")
            }
            return "matches the authorization code"
        },
    ]

    static func timestamp(_ seconds: Double) -> String {
        Date(timeIntervalSince1970: seconds).formatted(.iso8601)
    }
}
