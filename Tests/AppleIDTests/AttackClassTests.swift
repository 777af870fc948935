import AppleID
import Foundation
import JOSE
import SIWAFixtures
import Testing

/// One test per attack class of Tests/Fixtures/vectors/attacks/jwt_attack_classes.json. Each runs
/// the class's negative tokens (derived from the real token vapor-jwt-dMlERBaFdK-2025, verified
/// with Apple's real keys at that token's clock) and expects the exact rule that stops it, so
/// removing the protection changes the outcome and fails the test.
@Suite struct AttackClassTests {
    let negatives: AppleVectors.Negatives
    let base: AppleVectors.RealToken
    let verifier: IdentityTokenVerifier

    init() throws {
        negatives = try AppleVectors.negatives()
        base = try AppleVectors.token(negatives.base_token_for_derived.id)
        verifier = IdentityTokenVerifier(
            keys: try AppleVectors.appleKeys(),
            policy: IdentityTokenPolicy(clientIDs: [base.aud], requireNonce: false))
    }

    func expect(_ ids: [String], rejectedWith code: SignInError.Code, sourceLocation: SourceLocation = #_sourceLocation) throws {
        // The base token itself passes: only the attack makes the difference.
        _ = try verifier.verify(base.token, nonce: nil, now: base.suggested_fixed_clock)
        for id in ids {
            guard let attack = negatives.all.first(where: { $0.id == id }) else {
                Issue.record("no negative case \(id)", sourceLocation: sourceLocation)
                continue
            }
            do {
                _ = try verifier.verify(attack.token, nonce: nil, now: base.suggested_fixed_clock)
                Issue.record("\(id) was accepted", sourceLocation: sourceLocation)
            } catch let error as SignInError {
                #expect(error.code == code, "\(id): \(error)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test("alg none (any case, signature dropped or kept) is refused by the RS256 pin")
    func algNone() throws {
        try expect(
            ["alg-none-empty-sig", "alg-None-empty-sig", "alg-NONE-empty-sig", "alg-nOnE-empty-sig", "alg-none-keep-sig"],
            rejectedWith: .unsupportedAlgorithm)
    }

    @Test("RS256 to HS256 key confusion with the Apple key as HMAC secret is refused: there is no HMAC path")
    func keyConfusion() throws {
        try expect(
            [
                "hs256-secret-spki-pem", "hs256-secret-spki-pem-nonl", "hs256-secret-pkcs1-pem", "hs256-secret-spki-der",
                "hs256-secret-jwk-json",
            ], rejectedWith: .unsupportedAlgorithm)
    }

    @Test("HS256 with a blank secret is refused")
    func blankPassword() throws {
        try expect(["hs256-empty-secret"], rejectedWith: .unsupportedAlgorithm)
    }

    @Test("An empty signature is refused")
    func nullSignature() throws {
        try expect(["null-signature"], rejectedWith: .signatureInvalid)
        try expect(["two-segments", "four-segments"], rejectedWith: .malformedToken)
    }

    @Test("A key embedded in the jwk header is ignored: the token is checked against Apple's key and fails")
    func jwkInjection() throws {
        try expect(["embedded-jwk-injection"], rejectedWith: .signatureInvalid)
    }

    @Test("A jku header is never fetched: the attacker's kid is not in Apple's key set")
    func jkuSpoofing() throws {
        try expect(["jku-injection"], rejectedWith: .unknownKeyID)
    }

    @Test("kid is an opaque lookup key: traversal and SQL strings find nothing, a swapped kid fails, a missing kid is refused")
    func kidInjection() throws {
        try expect(["kid-path-traversal", "kid-sqli"], rejectedWith: .unsupportedAlgorithm)
        try expect(["kid-swapped-to-other-apple-key"], rejectedWith: .signatureInvalid)
        try expect(["kid-missing"], rejectedWith: .missingKeyID)
        // The same injection strings under RS256 reach the key lookup and find nothing.
        let signer = try TestSigner()
        for kid in ["../../../../dev/null", "x' UNION SELECT '1", "AIDOPK1\u{0}"] {
            let header = #"{"alg":"RS256","kid":"\#(kid.replacingOccurrences(of: "\u{0}", with: "\\u0000"))"}"#
            let token = try signer.sign(header: header, claims: TestSigner.claims())
            #expect(throws: SignInError(.unknownKeyID)) { try verifier.verify(token, nonce: nil, now: 1_700_000_000) }
        }
    }

    @Test("Claims are not read before the signature: tampered claims fail as a bad signature, not as a claim error")
    func signatureNotChecked() throws {
        try expect(
            ["tampered-aud-keep-sig", "tampered-exp-keep-sig", "tampered-sub-keep-sig", "sig-bitflip-last", "sig-bitflip-first"],
            rejectedWith: .signatureInvalid)
        // A tampered token that is also expired reports the signature, which is checked first.
        let tampered = negatives.all.first { $0.id == "tampered-aud-keep-sig" }!
        #expect(throws: SignInError(.signatureInvalid)) { try verifier.verify(tampered.token, nonce: nil, now: base.exp + 3600) }
    }

    @Test("ES256 with r = s = 0 (psychic signature) is refused by the RS256 pin, and by ECDSA itself")
    func psychicSignature() throws {
        try expect(["es256-psychic-zero-sig"], rejectedWith: .unsupportedAlgorithm)
        let key = try P256PrivateKey().publicKey
        #expect(!key.isValidSignature([UInt8](repeating: 0, count: 64), for: Array("anything".utf8)))
    }

    @Test("RS512, PS256 and a lowercase rs256 are refused: alg must be exactly RS256")
    func algMismatch() throws {
        try expect(["alg-rs512-keep-sig", "alg-ps256-keep-sig"], rejectedWith: .unsupportedAlgorithm)
        let signer = try TestSigner()
        let lower = try signer.sign(header: #"{"alg":"rs256","kid":"test-key-1"}"#, claims: TestSigner.claims())
        let relaxed = IdentityTokenVerifier(keys: signer.keys, policy: IdentityTokenPolicy(clientIDs: ["com.example.app"]))
        #expect(throws: SignInError(.unsupportedAlgorithm)) { try relaxed.verify(lower, nonce: "raw-nonce", now: 1_700_000_000) }
    }

    @Test("RSA signatures must be exactly modulus-length: truncated or zero-prefixed ones fail")
    func rsaPKCS1Parsing() throws {
        try expect(["sig-truncated-255", "sig-leading-zero-256+1"], rejectedWith: .signatureInvalid)
    }

    @Test("ES256 signatures are 64-byte R||S only: DER or other lengths fail, high-S verifies")
    func ecdsaEncoding() throws {
        let key = try P256PrivateKey()
        let message = Array("m".utf8)
        let raw = try key.signature(for: message)
        #expect(key.publicKey.isValidSignature(raw, for: message))
        #expect(!key.publicKey.isValidSignature(ECDSASignature.der(fromRaw: raw)!, for: message))
        #expect(!key.publicKey.isValidSignature(raw + [0], for: message))
        #expect(!key.publicKey.isValidSignature(raw.dropLast(), for: message))
        // An identity token claiming ES256 never reaches ECDSA.
        let signer = try TestSigner()
        let token = try signer.sign(header: #"{"alg":"ES256","kid":"test-key-1"}"#, claims: TestSigner.claims())
        #expect(throws: SignInError(.unsupportedAlgorithm)) {
            try IdentityTokenVerifier(keys: signer.keys, policy: IdentityTokenPolicy(clientIDs: ["com.example.app"])).verify(
                token, nonce: "raw-nonce", now: 1_700_000_000)
        }
    }

    @Test("A crit header (b64:false included) is refused even with a valid signature")
    func critAndB64() throws {
        let signer = try TestSigner()
        let verifier = IdentityTokenVerifier(keys: signer.keys, policy: IdentityTokenPolicy(clientIDs: ["com.example.app"]))
        for header in [
            #"{"alg":"RS256","kid":"test-key-1","crit":["b64"],"b64":false}"#, #"{"alg":"RS256","kid":"test-key-1","crit":["exp"]}"#,
            #"{"alg":"RS256","kid":"test-key-1","crit":[]}"#,
        ] {
            let token = try signer.sign(header: header, claims: TestSigner.claims())
            #expect(throws: SignInError(.unsupportedCriticalHeader)) { try verifier.verify(token, nonce: "raw-nonce", now: 1_700_000_000) }
        }
        // The same token without crit passes: crit alone is what stops it.
        _ = try verifier.verify(try signer.sign(claims: TestSigner.claims()), nonce: "raw-nonce", now: 1_700_000_000)
    }

    @Test("Padding, the standard alphabet, and surrounding whitespace are refused, not normalised")
    func encodingStrictness() throws {
        try expect(
            ["sig-standard-base64-padded", "header-segment-padded", "trailing-newline", "leading-space"], rejectedWith: .malformedToken)
    }

    @Test("Registered claims: wrong aud, expiry, wrong nonce, and a notification as login are refused")
    func claimsValidation() throws {
        #expect(throws: SignInError(.audienceMismatch)) {
            try IdentityTokenVerifier(
                keys: try AppleVectors.appleKeys(), policy: IdentityTokenPolicy(clientIDs: ["com.example.other"], requireNonce: false)
            )
            .verify(base.token, nonce: nil, now: base.suggested_fixed_clock)
        }
        #expect(throws: SignInError(.expired)) { try verifier.verify(base.token, nonce: nil, now: base.exp + 60) }
        let nonceToken = try AppleVectors.token("fastcrypto-W6WcOKB-2023-nonce")
        #expect(throws: SignInError(.nonceMismatch)) {
            try IdentityTokenVerifier(keys: try AppleVectors.appleKeys(), policy: IdentityTokenPolicy(clientIDs: [nonceToken.aud]))
                .verify(nonceToken.token, nonce: "some-other-nonce", now: nonceToken.suggested_fixed_clock)
        }
        let notification = try AppleVectors.notifications().first!
        #expect(throws: SignInError(.missingSubject)) {
            try IdentityTokenVerifier(
                keys: try AppleVectors.appleKeys(), policy: IdentityTokenPolicy(clientIDs: [notification.aud], requireNonce: false)
            )
            .verify(notification.payload_jwt, nonce: nil, now: notification.suggested_fixed_clock)
        }
    }

    @Test("A token signed by another key under Apple's kid fails")
    func wrongKey() throws {
        try expect(["attacker-key-same-kid"], rejectedWith: .signatureInvalid)
        // And the attacker's key really did sign it: it verifies with the attacker's public key.
        let attack = negatives.all.first { $0.id == "attacker-key-same-kid" }!
        let attacker = try RSAPrivateKey(jwk: negatives.attacker_private_jwk)
        let jws = try CompactJWS(attack.token)
        #expect(attacker.publicKey.isValidSignature(jws.signature, for: jws.signingInput))
    }

    @Test("The two real-world broken tokens are refused")
    func realWorld() throws {
        // The Korean blog copy has a character missing, so its payload is not valid base64url JSON.
        let expected: [String: SignInError.Code] = ["bad-signature": .signatureInvalid, "malformed": .malformedToken]
        for attack in negatives.real_world {
            #expect(throws: SignInError(try #require(expected[attack.attack_class])), "\(attack.id)") {
                try verifier.verify(attack.token, nonce: nil, now: base.suggested_fixed_clock)
            }
        }
    }

    @Test("Every negative case in the vector file is refused")
    func everyNegativeCase() throws {
        let verifier = IdentityTokenVerifier(
            keys: try AppleVectors.appleKeys(), policy: IdentityTokenPolicy(clientIDs: [base.aud], requireNonce: false))
        #expect(negatives.all.count == 37)
        // The refusal each class must meet: the first rule of the fixed order that the token breaks.
        // The kid-injection tokens are HS256, so their `alg` is refused before the `kid` is looked up.
        let expected: [String: SignInError.Code] = [
            "bad-signature": .signatureInvalid, "malformed": .malformedToken, "alg-none": .unsupportedAlgorithm,
            "null-signature": .signatureInvalid, "key-confusion": .unsupportedAlgorithm, "blank-password": .unsupportedAlgorithm,
            "tampered-claims": .signatureInvalid, "alg-mismatch": .unsupportedAlgorithm, "psychic-signature": .unsupportedAlgorithm,
            "wrong-key": .signatureInvalid, "missing-kid": .missingKeyID, "kid-injection": .unsupportedAlgorithm,
            "jwk-injection": .signatureInvalid, "jku-spoofing": .unknownKeyID, "encoding": .malformedToken,
        ]
        for attack in negatives.all {
            let code = try #require(expected[attack.attack_class], "a refusal for \(attack.attack_class)")
            #expect(throws: SignInError(code), "\(attack.id)") {
                try verifier.verify(attack.token, nonce: nil, now: base.suggested_fixed_clock)
            }
        }
    }
}
