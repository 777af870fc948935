import Accounts
import Foundation
import Identity
import JOSE
import SIWATestSupport
import StrictJSON
import Testing

/// Our access tokens (ES256 and RS256, rotation), the data keys for Apple's refresh tokens, and
/// opaque tokens.
@Suite struct AccessTokensTests {
    static let start = 1_800_000_000.0

    /// A fresh key directory with one key of `algorithm`.
    func keyDirectory(_ algorithm: AccessTokenAlgorithm = .es256) throws -> String {
        let directory = NSTemporaryDirectory() + "siwa-keys-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        _ = try AccessTokenKeyFiles.add(algorithm, to: directory, now: Date(timeIntervalSince1970: 1_700_000_000))
        return directory
    }

    @Test(
        "An access token is signed with its key's algorithm, has kid and typ, names user and session, lives 15 minutes, and verifies",
        arguments: AccessTokenAlgorithm.allCases)
    func issueAndVerify(algorithm: AccessTokenAlgorithm) throws {
        let directory = try keyDirectory(algorithm)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(Self.start)
        let tokens = try AccessTokens(directory: directory, issuer: "https://auth.example.com", clock: clock)
        let (token, expiresIn) = try tokens.issue(userID: 42, sessionID: 7)
        #expect(expiresIn == 900)
        let jws = try CompactJWS(token)
        #expect(try jws.header.string("alg") == algorithm.rawValue)
        #expect(try jws.header.string("kid") == "20231114T221320Z")
        #expect(try jws.header.string("typ") == "at+jwt")
        #expect(jws.signature.count == (algorithm == .es256 ? 64 : 256))
        clock.set(Self.start + 899)
        let claims = try tokens.verify(token)
        #expect(claims == AccessTokenClaims(userID: 42, sessionID: 7, expiresAt: 1_800_000_900))
        #expect(try tokens.verify(token) == claims, "verified again, from the verified tokens")
        clock.set(Self.start + 900)
        #expect(throws: IdentityError(.accessTokenRefused), "expiry is checked at every use") { try tokens.verify(token) }
        clock.set(Self.start)
        let other = try AccessTokens(directory: directory, issuer: "https://other.example.com", clock: clock)
        #expect(throws: IdentityError(.accessTokenRefused), "another issuer") { try other.verify(token) }
        // A tampered claim, and a token with the same header signed by another key of the same type.
        let parts = token.split(separator: ".")
        let forgedClaims = Base64URL.encode(
            Array(#"{"iss":"https://auth.example.com","sub":"1","sid":"7","iat":1800000000,"exp":1800000900}"#.utf8))
        #expect(throws: IdentityError(.accessTokenRefused)) { try tokens.verify("\(parts[0]).\(forgedClaims).\(parts[2])") }
        let header = String(decoding: Base64URL.decode(parts[0])!, as: UTF8.self)
        let payload = String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self)
        let stranger: ([UInt8]) throws -> [UInt8] =
            algorithm == .es256 ? { try P256PrivateKey().signature(for: $0) } : { try RSAPrivateKey().signature(for: $0) }
        let strangerToken = try CompactJWS.serialize(header: header, claims: payload, sign: stranger)
        #expect(throws: IdentityError(.accessTokenRefused)) { try tokens.verify(strangerToken) }
    }

    @Test("The JWKS publishes each key with its own type: EC P-256 with x and y, RSA with n and e")
    func jwksKeyTypes() throws {
        let directory = try keyDirectory(.rs256)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let newKeyID = try AccessTokenKeyFiles.add(.es256, to: directory, now: Date(timeIntervalSince1970: 1_700_000_100))
        let tokens = try AccessTokens(directory: directory, issuer: "https://a.example")
        let jwks = try JSONObject(parsing: tokens.jwks())
        let keys = try #require(try jwks.objectArray("keys"))
        #expect(keys.count == 2)
        let ec = try #require(keys.first { (try? $0.string("kid")) == newKeyID })
        #expect(try ec.string("kty") == "EC" && ec.string("crv") == "P-256" && ec.string("alg") == "ES256")
        let x = try #require(try ec.string("x"))
        let y = try #require(try ec.string("y"))
        let publicKey = try P256PublicKey(x: x, y: y)
        // The published key verifies what the server signs.
        let jws = try CompactJWS(try tokens.issue(userID: 1, sessionID: 1).token)
        #expect(publicKey.isValidSignature(jws.signature, for: jws.signingInput))
        let rsa = try #require(keys.first { (try? $0.string("kid")) == "20231114T221320Z" })
        #expect(try rsa.string("kty") == "RSA" && rsa.string("alg") == "RS256" && rsa.contains("n") && rsa.contains("e"))
    }

    @Test("A header whose alg is not the key's type is refused, even with a valid signature of that key")
    func algorithmFollowsTheKey() throws {
        let directory = try keyDirectory(.es256)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = try AccessTokens(directory: directory, issuer: "https://auth.example.com", clock: ManualClock(Self.start))
        let key = try #require(tokens.keys.first)
        let pem = try String(contentsOfFile: directory + "/" + key.keyID + ".pem", encoding: .utf8)
        let signer = try P256PrivateKey(pem: pem)
        let claims = #"{"iss":"https://auth.example.com","sub":"1","sid":"2","iat":1800000000,"exp":1800000900}"#
        for header in [
            #"{"alg":"RS256","kid":"\#(key.keyID)","typ":"at+jwt"}"#, #"{"alg":"ES256","kid":"\#(key.keyID)"}"#,
            #"{"alg":"ES256","kid":"\#(key.keyID)","typ":"JWT"}"#, #"{"alg":"none","kid":"\#(key.keyID)","typ":"at+jwt"}"#,
        ] {
            let token = try CompactJWS.serialize(header: header, claims: claims, sign: signer.signature(for:))
            #expect(throws: IdentityError(.accessTokenRefused), "\(header)") { try tokens.verify(token) }
        }
        let good = try CompactJWS.serialize(
            header: #"{"alg":"ES256","kid":"\#(key.keyID)","typ":"at+jwt"}"#, claims: claims, sign: signer.signature(for:))
        #expect(try tokens.verify(good).sessionID == 2, "the same key and claims with the right header verify")
    }

    @Test(
        "A rotation to another key type: the new key signs, tokens of the old one verify until they expire; pruning drops only long-replaced keys",
        arguments: [(AccessTokenAlgorithm.rs256, AccessTokenAlgorithm.es256), (.es256, .rs256)])
    func rotation(from old: AccessTokenAlgorithm, to new: AccessTokenAlgorithm) throws {
        let directory = try keyDirectory(old)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock(Date().timeIntervalSince1970)
        let running = try AccessTokens(directory: directory, issuer: "https://a.example", clock: clock, rescanInterval: 10)
        let (before, _) = try running.issue(userID: 1, sessionID: 1)
        let newKeyID = try AccessTokenKeyFiles.add(new, to: directory, now: Date())
        #expect(
            try CompactJWS(try running.issue(userID: 1, sessionID: 2).token).header.string("kid") != newKeyID,
            "not before the next scan")
        clock.advance(10)
        let (after, _) = try running.issue(userID: 1, sessionID: 2)
        #expect(try CompactJWS(after).header.string("kid") == newKeyID, "the running instance picked up the new key")
        #expect(try CompactJWS(after).header.string("alg") == new.rawValue)
        #expect(try running.verify(before).sessionID == 1)
        #expect(try running.verify(after).sessionID == 2)
        #expect(running.jwks().contains(newKeyID) && running.jwks().contains("20231114T221320Z"))
        #expect(try AccessTokenKeyFiles.prune(in: directory, retention: 1200, now: Date()).isEmpty, "the old key was replaced just now")
        #expect(try AccessTokenKeyFiles.prune(in: directory, retention: 1200, now: Date().addingTimeInterval(1300)) == ["20231114T221320Z"])
        clock.advance(10)
        // Another request finds the rescan due and reloads the keys; a verification after it,
        // which finds no rescan due, refuses the token all the same (its shard is of the older keys).
        #expect(running.keys.map(\.keyID) == [newKeyID])
        #expect(throws: IdentityError(.accessTokenRefused), "a token verified before its key was removed is refused after") {
            try running.verify(before)
        }
        #expect(try running.verify(after).sessionID == 2)
        #expect(try AccessTokenKeyFiles.load(directory).map(\.keyID) == [newKeyID])
    }

    @Test("A key directory with a key readable by others, a file that is no key, or no key at all, is refused")
    func refusesBadDirectories() throws {
        let directory = try keyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try FileManager.default.contentsOfDirectory(atPath: directory)[0]
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory + "/" + file)
        #expect(throws: AccessTokenKeyError.self) { try AccessTokens(directory: directory, issuer: "x") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: directory + "/" + file)
        _ = try AccessTokens(directory: directory, issuer: "x")
        try FileManager.default.removeItem(atPath: directory + "/" + file)
        #expect(throws: AccessTokenKeyError.self) { try AccessTokens(directory: directory, issuer: "x") }
        _ = FileManager.default.createFile(
            atPath: directory + "/k1.pem", contents: Data("not a key".utf8), attributes: [.posixPermissions: 0o600])
        #expect(throws: AccessTokenKeyError.self) { try AccessTokens(directory: directory, issuer: "x") }
    }

    @Test("Apple's refresh token is sealed with AES-256-GCM under the first key, bound to its client id; every listed key opens")
    func dataKeys() throws {
        let k1 = Data((0..<32).map { UInt8($0) }).base64EncodedString()
        let k2 = Data((0..<32).map { UInt8(255 - $0) }).base64EncodedString()
        let old = try DataKeys(text: "k1 \(k1)\n")
        let sealed = try old.seal("r.apple-refresh-token", clientID: "com.example.app")
        #expect(sealed.keyID == "k1" && sealed.clientID == "com.example.app")
        #expect(!String(decoding: sealed.ciphertext, as: UTF8.self).contains("apple-refresh-token"))
        #expect(try old.seal("r.apple-refresh-token", clientID: "com.example.app").ciphertext != sealed.ciphertext, "a fresh IV each time")
        let rotated = try DataKeys(text: "# new key first\nk2 \(k2)\nk1 \(k1)\n")
        #expect(rotated.currentKeyID == "k2")
        #expect(rotated.open(sealed) == "r.apple-refresh-token")
        var moved = sealed
        moved.clientID = "com.example.other"
        #expect(rotated.open(moved) == nil, "the client id is authenticated")
        var tampered = sealed
        tampered.ciphertext[tampered.ciphertext.count / 2] ^= 1
        #expect(rotated.open(tampered) == nil)
        #expect(try DataKeys(text: "k2 \(k2)").open(sealed) == nil, "a removed key opens nothing")
        for bad in ["", "k1", "k1 c2hvcnQ=", "k1 \(k1)\nk1 \(k2)", "k/1 \(k1)"] {
            #expect(throws: DataKeysError.self, "\(bad)") { try DataKeys(text: bad) }
        }
    }

    @Test("Refresh tokens are 256 random bits; only their SHA-256 is kept, and malformed ones have no hash")
    func opaqueTokens() throws {
        let token = try OpaqueToken()
        #expect(Base64URL.decode(token.value)?.count == 32)
        #expect(token.hash == SHA256.hash(Array(token.value.utf8)))
        #expect(OpaqueToken.hash(of: token.value) == token.hash)
        #expect(try OpaqueToken().value != token.value)
        #expect(OpaqueToken.hash(of: "short") == nil && OpaqueToken.hash(of: String(repeating: "!", count: 43)) == nil)
    }
}
