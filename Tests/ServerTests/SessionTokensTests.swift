import Accounts
import Foundation
import JOSE
import Server
import Testing

/// Our access tokens, the data keys for Apple's refresh tokens, and the web flow's `return_to` rule.
@Suite struct SessionTokensTests {
    /// A fresh key directory with one key.
    func keyDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "siwa-keys-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        _ = try AccessTokens.addKey(to: directory, now: Date(timeIntervalSince1970: 1_700_000_000))
        return directory
    }

    @Test("An access token is RS256 with kid and typ, names user and session, lives 15 minutes, and verifies")
    func issueAndVerify() throws {
        let directory = try keyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = try AccessTokens(directory: directory, issuer: "https://auth.example.com")
        let (token, expiresIn) = try tokens.issue(userID: 42, sessionID: 7, now: 1_800_000_000)
        #expect(expiresIn == 900)
        let jws = try CompactJWS(token)
        #expect(try jws.header.string("alg") == "RS256")
        #expect(try jws.header.string("kid") == "20231114T221320Z")
        #expect(try jws.header.string("typ") == "at+jwt")
        let claims = try tokens.verify(token, now: 1_800_000_899)
        #expect(claims == AccessTokenClaims(userID: 42, sessionID: 7, expiresAt: 1_800_000_900))
        #expect(try tokens.verify(token, now: 1_800_000_899) == claims, "verified again, from the verified tokens")
        #expect(throws: HTTPError.self, "expiry is checked at every use") { try tokens.verify(token, now: 1_800_000_900) }
        let other = try AccessTokens(directory: directory, issuer: "https://other.example.com")
        #expect(throws: HTTPError.self, "another issuer") { try other.verify(token, now: 1_800_000_000) }
        // A tampered claim, and a token with the same header signed by another key.
        let parts = token.split(separator: ".")
        let forgedClaims = Base64URL.encode(Array(#"{"iss":"https://auth.example.com","sub":"1","sid":"7","iat":1800000000,"exp":1800000900}"#.utf8))
        #expect(throws: HTTPError.self) { try tokens.verify("\(parts[0]).\(forgedClaims).\(parts[2])", now: 1_800_000_000) }
        let stranger = try RSAPrivateKey()
        let strangerToken = try CompactJWS.serialize(
            header: String(decoding: Base64URL.decode(parts[0])!, as: UTF8.self),
            claims: String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self)) { try stranger.signature(for: $0) }
        #expect(throws: HTTPError.self) { try tokens.verify(strangerToken, now: 1_800_000_000) }
    }

    @Test("Identity tokens and tokens without typ at+jwt are refused, whatever their signature")
    func refusesOtherTokenTypes() throws {
        let directory = try keyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = try AccessTokens(directory: directory, issuer: "https://auth.example.com")
        let key = tokens.keys[0]
        let pem = try String(contentsOfFile: directory + "/" + key.keyID + ".pem", encoding: .utf8)
        let signer = try RSAPrivateKey(pem: pem)
        let claims = #"{"iss":"https://auth.example.com","sub":"1","sid":"2","iat":1800000000,"exp":1800000900}"#
        for header in [#"{"alg":"RS256","kid":"\#(key.keyID)"}"#, #"{"alg":"RS256","kid":"\#(key.keyID)","typ":"JWT"}"#] {
            let token = try CompactJWS.serialize(header: header, claims: claims) { try signer.signature(for: $0) }
            #expect(throws: HTTPError.self) { try tokens.verify(token, now: 1_800_000_000) }
        }
    }

    @Test("After a rotation the new key signs, the old key still verifies, and both are in the JWKS; pruning drops only long-replaced keys, whose tokens then fail")
    func rotation() throws {
        let directory = try keyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = try AccessTokens(directory: directory, issuer: "https://a.example", rescanInterval: 0)
        let (old, _) = try before.issue(userID: 1, sessionID: 1)
        let newKeyID = try AccessTokens.addKey(to: directory)
        let (new, _) = try before.issue(userID: 1, sessionID: 2)
        #expect(try CompactJWS(new).header.string("kid") == newKeyID, "the running instance picked up the new key")
        #expect(try before.verify(old).sessionID == 1)
        #expect(try before.verify(new).sessionID == 2)
        let jwks = try JSONObject(parsing: before.jwks())
        #expect(jwks.contains("keys"))
        #expect(before.jwks().contains(newKeyID) && before.jwks().contains("20231114T221320Z"))
        #expect(try AccessTokens.pruneKeys(in: directory, retention: 1200).isEmpty, "the old key was replaced just now")
        #expect(try AccessTokens.pruneKeys(in: directory, retention: 1200, now: Date().addingTimeInterval(1300)) == ["20231114T221320Z"])
        #expect(throws: HTTPError.self, "a token verified before its key was removed is refused after") { try before.verify(old) }
        #expect(try before.verify(new).sessionID == 2)
        #expect(try AccessTokens(directory: directory, issuer: "x").keys.map(\.keyID) == [newKeyID])
    }

    @Test("A key directory with a key readable by others, or with no key, is refused")
    func refusesBadDirectories() throws {
        let directory = try keyDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = try FileManager.default.contentsOfDirectory(atPath: directory)[0]
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory + "/" + file)
        #expect(throws: AccessTokenKeyError.self) { try AccessTokens(directory: directory, issuer: "x") }
        try FileManager.default.removeItem(atPath: directory + "/" + file)
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

    @Test("return_to accepts same-origin paths only")
    func returnTo() throws {
        for good in ["/", "/account", "/a/b?c=d#e"] { #expect(try WebSignIn.sameSitePath(good) == good) }
        for bad in ["", "account", "//evil.example", "/\\evil.example", "https://evil.example/", "/a\nb", "/a b", "/" + String(repeating: "a", count: 512)] {
            #expect(throws: HTTPError.self, "\(bad)") { try WebSignIn.sameSitePath(bad) }
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
