import AppleID
import Foundation
import JOSE
import StrictJSON
import Synchronization
import Testing

@Suite struct ClientSecretFactoryTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts")

    @Test("A client secret has Apple's header and claims, and verifies with our P-256 public key")
    func shape() throws {
        let key = try P256PrivateKey()
        let factory = ClientSecretFactory(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: key, lifetime: 86_400)
        let secret = try factory.make(for: "com.example.app", issuedAt: 1_700_000_000)
        let jws = try CompactJWS(secret)
        #expect(try jws.header.string("alg") == "ES256")
        #expect(try jws.header.string("kid") == "KEY1234567")
        #expect(jws.header.count == 2)
        let claims = try jws.decodePayload()
        #expect(try claims.string("iss") == "TEAM123456")
        #expect(try claims.integer("iat") == 1_700_000_000)
        #expect(try claims.integer("exp") == 1_700_086_400)
        #expect(try claims.string("aud") == "https://appleid.apple.com")
        #expect(try claims.string("sub") == "com.example.app")
        #expect(jws.signature.count == 64)
        #expect(key.publicKey.isValidSignature(jws.signature, for: jws.signingInput))
    }

    @Test("A client secret we make verifies with the openssl command line (R||S converted to DER)")
    func opensslVerifies() throws {
        let key = try P256PrivateKey()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("siwa-secret-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let p8 = directory.appendingPathComponent("AuthKey.p8")
        try key.pem().write(to: p8, atomically: true, encoding: .utf8)
        let factory = ClientSecretFactory(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: key)
        let script = Self.scripts.appendingPathComponent("verify-client-secret").path
        for clientID in ["com.example.app", "com.example.web"] {
            let output = try Shell.run("\(script) - \(p8.path)", input: try factory.secret(for: clientID) + "\n")
            #expect(output.contains("Verified OK"))
            #expect(output.contains(#""sub":"\#(clientID)""#))
        }
        // The check can fail: a secret signed by another key does not verify.
        let other = ClientSecretFactory(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: try P256PrivateKey())
        #expect(throws: Shell.Failure.self) {
            try Shell.run("\(script) - \(p8.path)", input: try other.secret(for: "com.example.app") + "\n")
        }
    }

    @Test("Secrets are cached per client id and renewed after half their lifetime")
    func caching() throws {
        let now = Mutex<Double>(1_700_000_000)
        let factory = ClientSecretFactory(
            teamID: "T", keyID: "K", privateKey: try P256PrivateKey(), lifetime: 3_600, clock: { now.withLock { $0 } })
        let first = try factory.secret(for: "a")
        #expect(try factory.secret(for: "a") == first)
        #expect(try factory.secret(for: "b") != first)
        now.withLock { $0 += 1_799 }
        #expect(try factory.secret(for: "a") == first)
        now.withLock { $0 += 1 }
        let renewed = try factory.secret(for: "a")
        #expect(renewed != first)
        let claims = try CompactJWS(renewed).decodePayload()
        #expect(try claims.integer("iat") == 1_700_001_800 - 60, "iat is set a minute in the past")
        #expect(try claims.integer("exp") == 1_700_001_800 - 60 + 3_600)
    }

    @Test(
        "No secret handed out is expired or about to expire, for every allowed lifetime",
        arguments: [60, 61, 90, 119, 120, 121, 239, 240, 241, 3_600, 86_400, ClientSecretFactory.maximumLifetime])
    func neverExpired(lifetime: Int) throws {
        let start = 1_700_000_000.25
        let now = Mutex<Double>(start)
        let factory = ClientSecretFactory(
            teamID: "T", keyID: "K", privateKey: try P256PrivateKey(), lifetime: lifetime, clock: { now.withLock { $0 } })
        // At least 15 s left for Apple to receive it: a minute from 4 minutes of lifetime up.
        let margin = lifetime >= 240 ? 60.0 : 15.0
        let step = max(0.25, Double(lifetime) / 400)
        var secrets: Set<String> = []
        // The least time left before `exp` of any secret handed out, and when; whether any had its
        // `iat` in the future or another lifetime.
        var least = (left: Double.infinity, at: 0.0)
        var wrongClaims: [String] = []
        while now.withLock({ $0 }) < start + 3 * Double(lifetime) {
            let time = now.withLock { $0 }
            let secret = try factory.secret(for: "com.example.app")
            secrets.insert(secret)
            let claims = try CompactJWS(secret).decodePayload()
            let issuedAt = Double(try #require(try claims.integer("iat")))
            let expiresAt = Double(try #require(try claims.integer("exp")))
            if issuedAt > time || expiresAt - issuedAt != Double(lifetime) {
                wrongClaims.append("iat \(issuedAt) exp \(expiresAt) at \(time)")
            }
            if expiresAt - time < least.left { least = (expiresAt - time, time - start) }
            now.withLock { $0 += step }
        }
        #expect(least.left >= margin, "a secret with \(least.left) s left before exp was handed out \(least.at) s in")
        #expect(wrongClaims.isEmpty, "iat in the future or another lifetime: \(wrongClaims.prefix(3))")
        // Cached, not made for each call: renewed at half its lifetime at the latest, about 6 in 3 lifetimes.
        #expect((6...14).contains(secrets.count), "\(secrets.count) secrets in 3 lifetimes of \(lifetime) s")
    }

    @Test("The .p8 loader refuses keys that are not P-256 private keys")
    func p8Loading() throws {
        #expect(throws: OpenSSLError.self) { try P256PrivateKey(pem: "not a key") }
        #expect(throws: OpenSSLError.self) { try P256PrivateKey(pem: try P256PrivateKey().publicKey.pem()) }
        let pem = try Shell.run("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 2>/dev/null")
        #expect(throws: OpenSSLError.self) { try P256PrivateKey(pem: pem) }
        let p256 = try Shell.run("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 2>/dev/null")
        _ = try P256PrivateKey(pem: p256)
    }
}
