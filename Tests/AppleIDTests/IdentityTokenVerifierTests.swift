import AppleID
import Foundation
import JOSE
import SIWAFixtures
import Testing

@Suite struct IdentityTokenVerifierTests {
    static let now: Double = 1_700_000_000

    func verifier(_ keys: any AppleKeySource, audiences: Set<String> = ["com.example.app"], leeway: Int = 60, requireNonce: Bool = true)
        -> IdentityTokenVerifier
    {
        IdentityTokenVerifier(keys: keys, policy: IdentityTokenPolicy(clientIDs: audiences, leeway: leeway, requireNonce: requireNonce))
    }

    // MARK: Real Apple tokens

    @Test("All 59 real Apple identity tokens verify with Apple's keys at their own clock")
    func realTokensVerify() throws {
        let keys = try AppleVectors.appleKeys()
        let tokens = try AppleVectors.realTokens()
        #expect(tokens.count == 59)
        for token in tokens {
            let identity = try verifier(keys, audiences: [token.aud], requireNonce: false)
                .verify(token.token, nonce: nil, now: token.suggested_fixed_clock)
            #expect(identity.subject == token.sub, "\(token.id)")
            #expect(identity.audience == token.aud, "\(token.id)")
            #expect(identity.keyID == token.kid, "\(token.id)")
            #expect(identity.expiresAt == token.exp, "\(token.id)")
        }
    }

    @Test("Every real token fails from exp + leeway on, and passes one second before")
    func realTokensExpire() throws {
        let keys = try AppleVectors.appleKeys()
        for token in try AppleVectors.realTokens() {
            let verifier = verifier(keys, audiences: [token.aud], requireNonce: false)
            #expect(throws: SignInError(.expired), "\(token.id)") {
                try verifier.verify(token.token, nonce: nil, now: token.exp + 60)
            }
            _ = try verifier.verify(token.token, nonce: nil, now: token.exp + 59)
            #expect(throws: SignInError(.expired), "\(token.id)") {
                try verifier.verify(token.token, nonce: nil, now: Date().timeIntervalSince1970)
            }
        }
    }

    @Test("With no leeway a token is expired exactly at exp (RFC 7519 'on or after')")
    func noLeeway() throws {
        let token = try AppleVectors.token("vapor-jwt-dMlERBaFdK-2025")
        let verifier = verifier(try AppleVectors.appleKeys(), audiences: [token.aud], leeway: 0, requireNonce: false)
        #expect(throws: SignInError(.expired)) { try verifier.verify(token.token, nonce: nil, now: token.exp) }
        _ = try verifier.verify(token.token, nonce: nil, now: token.exp - 1)
    }

    @Test("A token issued in the future (beyond the leeway) is refused")
    func issuedInFuture() throws {
        let token = try AppleVectors.token("vapor-jwt-dMlERBaFdK-2025")
        let verifier = verifier(try AppleVectors.appleKeys(), audiences: [token.aud], requireNonce: false)
        #expect(throws: SignInError(.issuedInFuture)) { try verifier.verify(token.token, nonce: nil, now: token.iat - 61) }
        _ = try verifier.verify(token.token, nonce: nil, now: token.iat - 60)
    }

    @Test("A real token for another app is refused (audience), and accepted when that app is configured too")
    func audience() throws {
        let token = try AppleVectors.token("vapor-jwt-dMlERBaFdK-2025")
        let keys = try AppleVectors.appleKeys()
        #expect(throws: SignInError(.audienceMismatch)) {
            try verifier(keys, audiences: ["com.example.other"], requireNonce: false).verify(
                token.token, nonce: nil, now: token.suggested_fixed_clock)
        }
        // Bundle id and Services ID side by side (docs/APPLE-PROTOCOL.md §4).
        _ = try verifier(keys, audiences: ["com.example.other", token.aud], requireNonce: false)
            .verify(token.token, nonce: nil, now: token.suggested_fixed_clock)
    }

    @Test("A kid that is not in the key set is refused")
    func unknownKid() throws {
        let token = try AppleVectors.token("vapor-jwt-dMlERBaFdK-2025")
        #expect(throws: SignInError(.unknownKeyID)) {
            try verifier(StaticAppleKeys([]), audiences: [token.aud], requireNonce: false).verify(
                token.token, nonce: nil, now: token.suggested_fixed_clock)
        }
    }

    @Test("The real token with a nonce fails against another nonce")
    func realNonceMismatch() throws {
        let token = try AppleVectors.token("fastcrypto-W6WcOKB-2023-nonce")
        #expect(throws: SignInError(.nonceMismatch)) {
            try verifier(try AppleVectors.appleKeys(), audiences: [token.aud]).verify(
                token.token, nonce: "some-other-nonce", now: token.suggested_fixed_clock)
        }
    }

    @Test("An Apple notification presented as an identity token is refused, though its signature is Apple's")
    func notificationAsIdentityToken() throws {
        let notification = try AppleVectors.notifications().first { $0.id == "notif-lunaone-consent-revoked-2025" }!
        #expect(throws: SignInError(.missingSubject)) {
            try verifier(try AppleVectors.appleKeys(), audiences: [notification.aud], requireNonce: false)
                .verify(notification.payload_jwt, nonce: nil, now: notification.suggested_fixed_clock)
        }
    }

    // MARK: Claims, with tokens signed by a test key

    @Test("A token with the right nonce, audience and times verifies and yields its claims")
    func verifiesOwnToken() throws {
        let signer = try TestSigner()
        let identity = try verifier(signer.keys).verify(try signer.sign(claims: TestSigner.claims()), nonce: "raw-nonce", now: Self.now)
        #expect(identity.subject == "001234.abcdef.0001")
        #expect(identity.email == "x@privaterelay.appleid.com")
        #expect(identity.emailVerified == true)
        #expect(identity.isPrivateEmail == true)
        #expect(identity.nonceSupported == true)
        #expect(identity.realUserStatus == 2)
        #expect(identity.keyID == TestSigner.keyID)
    }

    @Test("email_verified false is kept false, whether a boolean or a string")
    func emailVerifiedFalse() throws {
        let signer = try TestSigner()
        for value in ["false", #""false""#] {
            let token = try signer.sign(claims: TestSigner.claims(["email_verified": value, "is_private_email": "false"]))
            let identity = try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now)
            #expect(identity.emailVerified == false)
            #expect(identity.isPrivateEmail == false)
        }
    }

    @Test("transfer_sub is parsed")
    func transferSub() throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims(["transfer_sub": #""000999.old.0001""#]))
        #expect(try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now).transferSubject == "000999.old.0001")
    }

    @Test(
        "Claims of the wrong type are refused",
        arguments: [
            ["exp": #""1700000600""#], ["iat": #""1700000000""#], ["email_verified": #""yes""#],
            ["is_private_email": "1"], ["nonce_supported": "null"], ["real_user_status": #""2""#], ["email": "5"],
            ["nbf": #""0""#], ["real_user_status": "2.5"], ["auth_time": #""x""#], ["transfer_sub": "true"], ["iss": "1"],
        ])
    func claimTypes(override: [String: String]) throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims(override))
        #expect(throws: SignInError(.invalidClaim)) { try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("iss must be exactly Apple's issuer: not discovery's account.apple.com, not a prefix, not absent")
    func issuer() throws {
        let signer = try TestSigner()
        for issuer in [#""https://account.apple.com""#, #""https://appleid.apple.com/""#, #""http://appleid.apple.com""#] {
            let token = try signer.sign(claims: TestSigner.claims(["iss": issuer]))
            #expect(throws: SignInError(.issuerMismatch)) { try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now) }
        }
        let token = try signer.sign(claims: TestSigner.claims(removing: ["iss"]))
        #expect(throws: SignInError(.issuerMismatch)) { try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("aud as an array is accepted only with exactly one configured value")
    func audienceArray() throws {
        let signer = try TestSigner()
        let single = try signer.sign(claims: TestSigner.claims(["aud": #"["com.example.app"]"#]))
        _ = try verifier(signer.keys).verify(single, nonce: "raw-nonce", now: Self.now)
        let two = try signer.sign(claims: TestSigner.claims(["aud": #"["com.example.app","com.evil"]"#]))
        #expect(throws: SignInError(.audienceMismatch)) { try verifier(signer.keys).verify(two, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("sub must be present and non-empty")
    func subject() throws {
        let signer = try TestSigner()
        for token in [
            try signer.sign(claims: TestSigner.claims(removing: ["sub"])), try signer.sign(claims: TestSigner.claims(["sub": #""""#])),
        ] {
            #expect(throws: SignInError(.missingSubject)) { try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now) }
        }
    }

    @Test("nbf in the future is refused")
    func notBefore() throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims(["nbf": "\(Int(Self.now) + 120)"]))
        #expect(throws: SignInError(.notYetValid)) { try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("Fractional NumericDates are accepted")
    func fractionalDates() throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims(["exp": "1700000600.5", "iat": "1.7e9"]))
        #expect(try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now).expiresAt == 1_700_000_600.5)
    }

    // MARK: Every rule, on the fast path

    @Test("Every check refuses what it must: signature, alg, exp, aud, nonce, duplicate names in the header and the claims")
    func everyCheckRefuses() throws {
        let signer = try TestSigner()
        func expectRefused(_ name: String, _ code: SignInError.Code, _ token: String, nonce: String = "raw-nonce") {
            #expect(throws: SignInError(code), "\(name)") { try verifier(signer.keys).verify(token, nonce: nonce, now: Self.now) }
        }
        /// The default claims with `members` (JSON text) added at the end.
        func claims(adding members: String) -> String { String(TestSigner.claims().dropLast()) + "," + members + "}" }
        let good = try signer.sign(claims: TestSigner.claims())
        _ = try verifier(signer.keys).verify(good, nonce: "raw-nonce", now: Self.now)

        var tampered = Array(good.utf8)
        tampered[tampered.count - 10] = tampered[tampered.count - 10] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        expectRefused("one signature byte changed", .signatureInvalid, String(decoding: tampered, as: UTF8.self))
        for alg in ["RS512", "none", "rs256"] {
            let header = #"{"alg":"\#(alg)","kid":"test-key-1"}"#
            expectRefused("alg \(alg)", .unsupportedAlgorithm, try signer.sign(header: header, claims: TestSigner.claims()))
        }
        expectRefused("expired", .expired, try signer.sign(claims: TestSigner.claims(now: Self.now - 661)))
        let otherApp = try signer.sign(claims: TestSigner.claims(["aud": #""com.example.other""#]))
        expectRefused("another audience", .audienceMismatch, otherApp)
        expectRefused("another nonce", .nonceMismatch, good, nonce: "raw-nonce2")
        let hash = SHA256.hex(Array("raw-nonce".utf8))
        let short = try signer.sign(claims: TestSigner.claims(["nonce": "\"\(hash.dropLast())\""]))
        expectRefused("a nonce claim one digit short", .nonceMismatch, short)
        let long = try signer.sign(claims: TestSigner.claims(["nonce": "\"\(hash)0\""]))
        expectRefused("a nonce claim one digit too long", .nonceMismatch, long)

        // A name twice: in the header; in the claims plainly, through an escape, inside an unknown
        // claim's object, and among more names than are compared one by one (16).
        let twiceAlg = #"{"alg":"RS256","kid":"test-key-1","alg":"RS256"}"#
        expectRefused("alg twice in the header", .malformedToken, try signer.sign(header: twiceAlg, claims: TestSigner.claims()))
        expectRefused("sub twice", .malformedClaims, try signer.sign(claims: claims(adding: #""sub":"001234.other.0002""#)))
        expectRefused("sub twice, once escaped", .malformedClaims, try signer.sign(claims: claims(adding: #""\u0073ub":"x""#)))
        expectRefused("a name twice in an object", .malformedClaims, try signer.sign(claims: claims(adding: #""x":{"a":1,"a":2}"#)))
        let many = (0..<20).map { #""x\#($0)":\#($0)"# }.joined(separator: ",") + #","x19":0"#
        expectRefused("a name twice among 32 claims", .malformedClaims, try signer.sign(claims: claims(adding: many)))
    }

    // MARK: Nonce

    @Test("The nonce claim must be the SHA-256 hex of the raw nonce: the raw value itself does not pass")
    func nonceHashing() throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims())
        #expect(throws: SignInError(.nonceMismatch)) { try verifier(signer.keys).verify(token, nonce: "other", now: Self.now) }
        let raw = try signer.sign(claims: TestSigner.claims(["nonce": #""raw-nonce""#]))
        #expect(throws: SignInError(.nonceMismatch)) { try verifier(signer.keys).verify(raw, nonce: "raw-nonce", now: Self.now) }
        let upper = try signer.sign(claims: TestSigner.claims(["nonce": "\"\(SHA256.hex(Array("raw-nonce".utf8)).uppercased())\""]))
        #expect(throws: SignInError(.nonceMismatch)) { try verifier(signer.keys).verify(upper, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("A nonce is required when configured, even if the token has none")
    func nonceRequired() throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims())
        #expect(throws: SignInError(.nonceMissing)) { try verifier(signer.keys).verify(token, nonce: nil, now: Self.now) }
        let without = try signer.sign(claims: TestSigner.claims(["nonce_supported": "false"], removing: ["nonce"]))
        #expect(throws: SignInError(.nonceMissing)) { try verifier(signer.keys).verify(without, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("When not configured, a nonce sent is still checked, and required if the token says nonce_supported")
    func nonceOptional() throws {
        let signer = try TestSigner()
        let relaxed = verifier(signer.keys, requireNonce: false)
        let supported = try signer.sign(claims: TestSigner.claims(removing: ["nonce"]))
        #expect(throws: SignInError(.nonceMissing)) { try relaxed.verify(supported, nonce: "raw-nonce", now: Self.now) }
        let unsupported = try signer.sign(claims: TestSigner.claims(["nonce_supported": "false"], removing: ["nonce"]))
        _ = try relaxed.verify(unsupported, nonce: "raw-nonce", now: Self.now)
        #expect(throws: SignInError(.nonceMismatch)) {
            try relaxed.verify(try signer.sign(claims: TestSigner.claims()), nonce: "wrong", now: Self.now)
        }
    }

    // MARK: c_hash

    @Test("c_hash is checked against the authorization code when both are present")
    func codeHash() throws {
        let signer = try TestSigner()
        let code = "c1234.0.abcd.efgh"
        let hash = Base64URL.encode(SHA256.hash(Array(code.utf8)).prefix(16))
        let token = try signer.sign(claims: TestSigner.claims(["c_hash": "\"\(hash)\""]))
        _ = try verifier(signer.keys).verify(token, nonce: "raw-nonce", authorizationCode: code, now: Self.now)
        #expect(throws: SignInError(.codeHashMismatch)) {
            try verifier(signer.keys).verify(token, nonce: "raw-nonce", authorizationCode: "another-code", now: Self.now)
        }
        // Without a code there is nothing to compare.
        _ = try verifier(signer.keys).verify(token, nonce: "raw-nonce", now: Self.now)
    }

    @Test("The real web token's c_hash matches no code but its own: a foreign code is refused")
    func realCodeHash() throws {
        let token = try AppleVectors.token("vapor-jwt-dMlERBaFdK-2025")
        #expect(throws: SignInError(.codeHashMismatch)) {
            try verifier(try AppleVectors.appleKeys(), audiences: [token.aud], requireNonce: false)
                .verify(token.token, nonce: nil, authorizationCode: "not-the-code", now: token.suggested_fixed_clock)
        }
    }

    // MARK: Keys

    @Test("A key under 2048 bits is refused even when the signature is right")
    func weakKey() throws {
        // A 1024-bit key, made by the openssl CLI at test time (we refuse to generate one ourselves).
        let pem = try Shell.run("openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 2>/dev/null")
        let key = try RSAPrivateKey(pem: pem)
        let keys = StaticAppleKeys([AppleKey(keyID: "weak", algorithm: "RS256", publicKey: key.publicKey)])
        let input = Base64URL.encode(Array(#"{"alg":"RS256","kid":"weak"}"#.utf8)) + "." + Base64URL.encode(Array(TestSigner.claims().utf8))
        let token = input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
        #expect(throws: SignInError(.weakKey)) { try verifier(keys).verify(token, nonce: "raw-nonce", now: Self.now) }
    }

    @Test("A key whose own alg is not RS256 is refused")
    func keyAlgorithm() throws {
        let signer = try TestSigner()
        let keys = StaticAppleKeys([AppleKey(keyID: TestSigner.keyID, algorithm: "PS256", publicKey: signer.key.publicKey)])
        #expect(throws: SignInError(.keyAlgorithmMismatch)) {
            try verifier(keys).verify(try signer.sign(claims: TestSigner.claims()), nonce: "raw-nonce", now: Self.now)
        }
    }

    // MARK: Report

    @Test("The report lists every check in order and passes only when all pass")
    func report() throws {
        let signer = try TestSigner()
        let token = try signer.sign(claims: TestSigner.claims())
        let good = verifier(signer.keys).report(token, nonce: "raw-nonce", now: Self.now)
        #expect(good.passed)
        #expect(
            good.steps.map(\.name) == [
                "format", "alg", "kid", "crit", "key", "signature", "claims", "iss", "aud", "exp", "iat", "nbf", "sub", "claim types",
                "nonce", "c_hash",
            ])
        let late = verifier(signer.keys, audiences: ["other"]).report(token, nonce: "wrong", now: Self.now + 3600)
        #expect(!late.passed)
        #expect(late.steps.filter(\.failed).map(\.name) == ["aud", "exp", "nonce"])
        let garbage = verifier(signer.keys).report("not a token", nonce: nil, now: Self.now)
        #expect(!garbage.passed)
        #expect(garbage.steps.map(\.name) == ["format"])
    }
}

/// Runs a shell command and returns its standard output.
enum Shell {
    struct Failure: Error { let status: Int32 }

    static func run(_ command: String, input: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        let output = Pipe()
        process.standardOutput = output
        let stdin = Pipe()
        process.standardInput = stdin
        try process.run()
        if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
        try stdin.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(status: process.terminationStatus) }
        return String(decoding: data, as: UTF8.self)
    }
}
