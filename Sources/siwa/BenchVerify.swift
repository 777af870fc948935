import AppleID
import ArgumentParser
import Foundation
import JOSE

struct BenchVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-verify",
        abstract: "Measure identity-token verification (parse + RS256 + claims + nonce) on one thread.",
        discussion: """
            scripts/bench verify runs this next to `openssl speed rsa2048` and bench/evp_verify.c and prints the \
            ratios. Each figure is given in wall time and in the thread's CPU time: on a machine shared with other \
            work the CPU time is the steadier of the two.
            """)

    @Option(help: "Seconds to run.")
    var seconds: Double = 3

    @Flag(help: "Also time each part of a verification on its own (µs per token).")
    var stages = false

    func run() throws {
        // An Apple-shaped token (the claims of a native sign-in, about 900 bytes) signed by a fresh
        // 2048-bit key, as Apple's keys are.
        let key = try RSAPrivateKey(bits: 2048)
        let now = Date().timeIntervalSince1970
        let nonce = "bench-nonce-0123456789"
        let header = #"{"kid":"BENCHKEY01","alg":"RS256"}"#
        let claims =
            #"{"iss":"https://appleid.apple.com","aud":"com.example.app","exp":\#(Int(now) + 600),"iat":\#(Int(now)),"sub":"001542.b04100c51acb48d3a570684f17d6394d.1603","nonce":"\#(SHA256.hex(Array(nonce.utf8)))","c_hash":"OR2WwAhWOpkL_cm2osLLuQ","email":"8ysbchvc2m@privaterelay.appleid.com","email_verified":true,"is_private_email":true,"auth_time":\#(Int(now)),"nonce_supported":true,"real_user_status":2}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let token = input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
        // Built from n and e, as keys from Apple's JWKS are (not the key pair itself).
        let publicKey = try RSAPublicKey(modulus: key.publicKey.modulus, exponent: key.publicKey.exponent)
        let keys = StaticAppleKeys([AppleKey(keyID: "BENCHKEY01", algorithm: "RS256", publicKey: publicKey)])
        let verifier = IdentityTokenVerifier(keys: keys, policy: IdentityTokenPolicy(clientIDs: ["com.example.app"]))
        _ = try verifier.verify(token, nonce: nonce, now: now)

        let whole = try Self.measure(for: seconds) { _ = try verifier.verify(token, nonce: nonce, now: now) }
        // The RS256 step alone, through the same OpenSSL wrapper.
        let jws = try CompactJWS(token)
        var valid = 0
        let rsa = Self.measure(for: 1) { if publicKey.isValidSignature(jws.signature, for: jws.signingInput) { valid += 1 } }
        precondition(valid > 0, "the RS256 signature does not verify")
        print("token bytes: \(token.utf8.count)")
        print(String(format: "RS256 verify alone: %.0f/s (CPU %.2f µs each)", 1e6 / rsa.wall, rsa.cpu))
        print(
            String(
                format: "siwa verify-token: %.0f tokens/s (%.2f µs each), 1 thread; CPU %.2f µs each",
                1e6 / whole.wall, whole.wall, whole.cpu))
        if stages { try printStages(token: token, jws: jws, keys: keys, nonce: nonce, verifier: verifier, now: now) }
    }

    /// Wall and thread CPU time of one call of `body`, in µs, from calls in batches of 100 for `seconds`.
    private static func measure(for seconds: Double, _ body: () throws -> Void) rethrows -> (wall: Double, cpu: Double) {
        let wallStart = Self.time(CLOCK_MONOTONIC)
        let cpuStart = Self.time(CLOCK_THREAD_CPUTIME_ID)
        var count = 0
        while Self.time(CLOCK_MONOTONIC) - wallStart < seconds {
            for _ in 0..<100 { try body() }
            count += 100
        }
        let wall = Self.time(CLOCK_MONOTONIC) - wallStart
        let cpu = Self.time(CLOCK_THREAD_CPUTIME_ID) - cpuStart
        return (wall * 1e6 / Double(count), cpu * 1e6 / Double(count))
    }

    private static func time(_ clock: clockid_t) -> Double {
        var now = timespec()
        clock_gettime(clock, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// The cost of each part of a verification, timed alone on the same token: what the whole costs
    /// beyond the RS256 verification, and where.
    private func printStages(
        token: String, jws: CompactJWS, keys: StaticAppleKeys, nonce: String, verifier: IdentityTokenVerifier, now: Double
    ) throws {
        let publicKey = try keys.key(for: "BENCHKEY01").publicKey
        func time(_ name: String, _ body: () throws -> Void) rethrows {
            let (_, cpu) = try Self.measure(for: 0.5, body)
            print("  " + name.padding(toLength: 44, withPad: " ", startingAt: 0) + String(format: "%6.2f µs", cpu))
        }
        print("stages, each timed alone (thread CPU time):")
        var sink = 0
        try time("split, base64url, header JSON (CompactJWS)") { sink &+= try CompactJWS(token).signature.count }
        try time("payload JSON (decodePayload)") { _ = try jws.decodePayload() }
        time("SHA-256 of the signing input") { sink &+= SHA256.hash(jws.signingInput).count }
        time("RS256: SHA-256 + EVP_PKEY_verify") {
            sink &+= publicKey.isValidSignature(jws.signature, for: jws.signingInput) ? 1 : 0
        }
        let nonceClaim = SHA256.hex(Array(nonce.utf8))
        time("nonce: SHA-256 hex compared") { sink &+= SHA256.isHexDigest(nonceClaim.utf8, of: nonce.utf8) ? 1 : 0 }
        let signatures = AppleJWSVerifier(keys: keys)
        try time("all but the claims (AppleJWSVerifier)") { sink &+= try signatures.verifiedClaims(token).keyID.utf8.count }
        try time("whole verification") { sink &+= try verifier.verify(token, nonce: nonce, now: now).subject.utf8.count }
        if sink == 42 { print("") }
    }
}
