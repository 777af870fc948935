/// Why an Apple identity token (or notification) was refused. One case per check, so tests and
/// logs name exactly which rule failed (docs/ARCHITECTURE.md, "Layers").
package struct SignInError: Error, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    package enum Code: String, Sendable, Equatable, CaseIterable {
        /// Not a compact JWS: wrong number of parts, bad base64url, header not a JSON object.
        case malformedToken
        /// Longer than the size limit.
        case tokenTooLarge
        /// `alg` is not exactly `RS256` (`none`, `HS256`, `ES256`, `RS512`, case variants...).
        case unsupportedAlgorithm
        /// No `kid`, or it is not a non-empty string.
        case missingKeyID
        /// The header has `crit`: no extension is understood, so none may be critical.
        case unsupportedCriticalHeader
        /// No key in Apple's key set has this `kid` (after at most one refetch per cooldown).
        case unknownKeyID
        /// Apple's key set could not be fetched and no copy is cached.
        case keysUnavailable
        /// The key's own `alg` is not RS256, or it is not an RSA signing key.
        case keyAlgorithmMismatch
        /// The RSA key is shorter than 2048 bits.
        case weakKey
        /// The signature does not verify with the key.
        case signatureInvalid
        /// The payload is not a JSON object with unique claim names.
        case malformedClaims
        /// `iss` is not exactly `https://appleid.apple.com`.
        case issuerMismatch
        /// `aud` is not exactly one of the configured client ids.
        case audienceMismatch
        /// A claim has the wrong JSON type (a NumericDate as a string, for example).
        case invalidClaim
        /// `exp` (plus leeway) is not in the future.
        case expired
        /// `iat` is in the future (beyond the leeway).
        case issuedInFuture
        /// `nbf` is in the future (beyond the leeway).
        case notYetValid
        /// `sub` is absent or empty.
        case missingSubject
        /// A nonce is required but the token or the client did not carry one.
        case nonceMissing
        /// The `nonce` claim is not the SHA-256 of the nonce the client sent.
        case nonceMismatch
        /// `c_hash` does not match the authorization code.
        case codeHashMismatch
    }

    package let code: Code
    /// A human explanation, safe to log: it never contains the token, a nonce or an email.
    package let reason: String
    package let file: String
    package let line: Int

    package init(_ code: Code, _ reason: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.reason = reason
        self.file = file
        self.line = line
    }

    package var description: String { reason.isEmpty ? code.rawValue : "\(code.rawValue): \(reason)" }

    package var debugDescription: String { "SignInError.\(description) [\(file):\(line)]" }

    /// Errors compare by code only.
    package static func == (lhs: SignInError, rhs: SignInError) -> Bool { lhs.code == rhs.code }
}
