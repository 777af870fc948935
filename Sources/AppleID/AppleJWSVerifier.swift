import JOSE
package import StrictJSON

/// One named check of a verification and its outcome, as `siwa verify-token` prints them.
package struct VerificationStep: Sendable {
    package enum Outcome: Sendable {
        case passed(String)
        case failed(SignInError)
    }

    package let name: String
    package let outcome: Outcome

    package var failed: Bool {
        if case .failed = outcome { return true }
        return false
    }
}

/// Runs checks in order; in recording mode it keeps a step per check for the report.
struct StepRunner {
    let recording: Bool
    var steps: [VerificationStep] = []

    /// Runs `body`, which returns a detail for the report (only built when recording).
    mutating func run(_ name: String, _ body: (_ recording: Bool) throws -> String) throws {
        _ = try run(name) { recording in ((), try body(recording)) }
    }

    /// Runs `body`, which returns its result and a detail for the report.
    mutating func run<T>(_ name: String, _ body: (_ recording: Bool) throws -> (T, String)) throws -> T {
        do {
            let (result, detail) = try body(recording)
            if recording { steps.append(VerificationStep(name: name, outcome: .passed(detail))) }
            return result
        } catch let error as SignInError {
            if recording { steps.append(VerificationStep(name: name, outcome: .failed(error))) }
            throw error
        }
    }
}

/// The signature half of verifying anything Apple signs (identity tokens and server-to-server
/// notifications), in the fixed order of docs/SECURITY.md rule 1:
/// split and decode the header; require `alg` exactly `RS256`, a `kid`, and no `crit`; take the
/// key by `kid` from Apple's key set only (`jku`, `jwk`, `x5u`, `x5c` are never read); require an
/// RS256 RSA key of 2048 bits or more; verify the signature; only then decode the claims.
package struct AppleJWSVerifier: Sendable {
    package let keys: any AppleKeySource

    package init(keys: any AppleKeySource) {
        self.keys = keys
    }

    /// The verified claims of `token`, straight through the checks.
    /// - Throws: `SignInError` naming the first rule the token breaks.
    package func verifiedClaims(_ token: some StringProtocol) throws -> (claims: JSONObject, keyID: String) {
        let jws = try Self.parse(token)
        try Self.checkAlgorithm(jws)
        let keyID = try Self.keyID(jws)
        try Self.checkNoCritical(jws)
        let key = try appleKey(keyID)
        try Self.checkSignature(jws, key)
        return (try Self.claims(jws), keyID)
    }

    /// The same checks, each recorded as a step of the report; stops at the first that fails.
    func verifiedClaims(_ token: some StringProtocol, runner: inout StepRunner) throws -> (claims: JSONObject, keyID: String) {
        let jws = try runner.run("format") { _ in (try Self.parse(token), "three base64url parts, header is a JSON object") }
        try runner.run("alg") { _ in
            try Self.checkAlgorithm(jws)
            return "RS256"
        }
        let keyID = try runner.run("kid") { _ in
            let keyID = try Self.keyID(jws)
            return (keyID, keyID)
        }
        try runner.run("crit") { _ in
            try Self.checkNoCritical(jws)
            return "absent"
        }
        let key = try runner.run("key") { recording in
            let key = try appleKey(keyID)
            return (key, recording ? "RSA \(key.publicKey.bitCount) bits from Apple's key set" : "")
        }
        try runner.run("signature") { _ in
            try Self.checkSignature(jws, key)
            return "RS256 verifies"
        }
        let claims = try runner.run("claims") { _ in (try Self.claims(jws), "a JSON object with unique names") }
        return (claims, keyID)
    }

    static func parse(_ token: some StringProtocol) throws -> CompactJWS {
        do {
            return try CompactJWS(token)
        } catch {
            throw SignInError(error.code == .tooLarge ? .tokenTooLarge : .malformedToken, error.reason)
        }
    }

    /// Compared exactly: "none", "None", "HS256", "RS512", "ES256" and any other value are refused.
    static func checkAlgorithm(_ jws: CompactJWS) throws {
        guard let alg = try? jws.header.string("alg"), alg == "RS256" else {
            throw SignInError(.unsupportedAlgorithm, "header alg must be exactly RS256")
        }
    }

    static func keyID(_ jws: CompactJWS) throws -> String {
        guard let kid = try? jws.header.string("kid"), !kid.isEmpty, kid.utf8.count <= 128 else {
            throw SignInError(.missingKeyID, "header has no kid")
        }
        return kid
    }

    static func checkNoCritical(_ jws: CompactJWS) throws {
        guard !jws.header.contains("crit") else {
            throw SignInError(.unsupportedCriticalHeader, "header marks extensions critical; none are supported")
        }
    }

    /// The key with this `kid` from Apple's key set, if it is an RS256 key of 2048 bits or more.
    func appleKey(_ keyID: String) throws -> AppleKey {
        let key = try keys.key(for: keyID)
        guard key.algorithm == nil || key.algorithm == "RS256" else {
            throw SignInError(.keyAlgorithmMismatch, "the key with this kid is for another algorithm")
        }
        guard key.publicKey.bitCount >= 2048 else {
            throw SignInError(.weakKey, "the key with this kid has \(key.publicKey.bitCount) bits; 2048 are required")
        }
        return key
    }

    static func checkSignature(_ jws: CompactJWS, _ key: AppleKey) throws {
        guard key.publicKey.isValidSignature(jws.signature, for: jws.signingInput) else {
            throw SignInError(.signatureInvalid, "the RS256 signature does not verify")
        }
    }

    static func claims(_ jws: CompactJWS) throws -> JSONObject {
        do {
            return try jws.decodePayload()
        } catch {
            throw SignInError(.malformedClaims, "the payload is not a JSON object with unique claims")
        }
    }
}

/// Reading claims in the forms Apple sends them.
extension JSONObject {
    /// A NumericDate claim (RFC 7519 §2): a JSON number, possibly fractional; nil if absent.
    func numericDate(_ name: String) throws -> Double? {
        do {
            return try number(name)
        } catch {
            throw SignInError(.invalidClaim, "\(name) must be a JSON number")
        }
    }

    /// A boolean Apple sends either as JSON `true`/`false` or as the string `"true"`/`"false"`.
    func appleBoolean(_ name: String) throws -> Bool? {
        // A JSON boolean or an absent claim takes one lookup; only another type is looked at again.
        if let value = try? bool(name) { return value }
        switch kind(of: name) {
        case nil: return nil
        case .string:
            switch try? string(name) {
            case "true": return true
            case "false": return false
            default: break
            }
        default: break
        }
        throw SignInError(.invalidClaim, "\(name) must be true or false, as a boolean or a string")
    }

    /// A string claim; a value of another type is an error.
    func stringClaim(_ name: String) throws -> String? {
        do {
            return try string(name)
        } catch {
            throw SignInError(.invalidClaim, "\(name) must be a string")
        }
    }
}
