import AppleID
import ArgumentParser
import Foundation
import JOSE

struct BenchVerify: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-verify",
        abstract: "Measure identity-token verification (parse + RS256 + claims + nonce) on one thread.",
        discussion: "scripts/bench verify runs this next to `openssl speed rsa2048` and prints the ratio.")

    @Option(help: "Seconds to run.")
    var seconds: Double = 3

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

        let clock = ContinuousClock()
        var count = 0
        let start = clock.now
        let end = start + .milliseconds(Int(seconds * 1000))
        while clock.now < end {
            for _ in 0..<100 {
                _ = try verifier.verify(token, nonce: nonce, now: now)
            }
            count += 100
        }
        let elapsed = clock.now - start
        let perSecond = Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        // The RS256 step alone, through the same OpenSSL wrapper.
        let jws = try CompactJWS(token)
        var rsaCount = 0
        let rsaStart = clock.now
        while clock.now < rsaStart + .seconds(1) {
            for _ in 0..<100 where publicKey.isValidSignature(jws.signature, for: jws.signingInput) { rsaCount += 1 }
        }
        print("token bytes: \(token.utf8.count)")
        print(String(format: "RS256 verify alone: %.0f/s", Double(rsaCount) / 1.0))
        print(String(format: "siwa verify-token: %.0f tokens/s (%.2f µs each), 1 thread", perSecond, 1e6 / perSecond))
    }
}
