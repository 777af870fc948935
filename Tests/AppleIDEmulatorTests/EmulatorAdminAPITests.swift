import AppleID
import AppleIDEmulator
import FastCGI
import Foundation
import JOSE
import SIWAFixtures
import SIWATestSupport
import StrictJSON
import Testing

/// The key set, the admin API, notifications and the state file.
@Suite struct EmulatorAdminAPITests {
    @Test("The key set has Apple's shape: kty, kid, use, alg, n, e in Apple's order, RSA-2048, cacheable")
    func keySet() throws {
        let harness = try EmulatorHarness()
        let response = harness.request("GET", "/auth/keys")
        #expect(response.status == 200)
        #expect(response.header("Cache-Control") == "max-age=3600")
        let keys = try #require(response.json?["keys"] as? [[String: String]])
        #expect(keys.count == 1)
        #expect(response.text.hasPrefix(#"{"keys":[{"kty":"RSA","kid":""#))
        struct Snapshots: Decodable {
            let snapshots: [Snapshot]
            struct Snapshot: Decodable { let jwks: [String: [[String: String]]] }
        }
        let apple = try Fixtures.decode(Snapshots.self, from: "apple/apple_jwks_snapshots.json").snapshots[0].jwks["keys"]![0]
        #expect(Set(keys[0].keys) == Set(apple.keys))
        #expect(keys[0]["kid"]?.range(of: "^[A-Za-z0-9]{7}$", options: .regularExpression) != nil)
        let parsed = try AppleKeySet.parse(response.body)
        #expect(parsed[0].publicKey.bitCount == 2048)
    }

    @Test("GET /admin/users lists every test user (two with one email are told apart by id and sub); GET / says what this is")
    func listAndIndex() throws {
        let harness = try EmulatorHarness()
        let first = try harness.createUser()
        let second = try harness.createUser()
        let users = try #require(try harness.admin("GET", "/admin/users")["users"] as? [[String: Any]])
        #expect(users.compactMap { $0["id"] as? String } == [first.id, second.id].sorted())
        #expect(Set(users.compactMap { $0["sub"] as? String }) == [first.sub, second.sub])
        let unauthorised = harness.request("GET", "/admin/users")
        #expect(unauthorised.status == 401 || unauthorised.status == 404, "the admin secret is required")
        let index = harness.request("GET", "/")
        #expect(index.status == 200 && index.text.contains("Apple ID emulator") && index.text.contains("/auth/keys"))
    }

    @Test(
        "A native sign-in mints what the SDK gives the app: a token siwa verifies with the raw nonce, real_user_status, transfer_sub; sub shaped like Apple's"
    )
    func nativeSignIn() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        #expect(user.sub.range(of: #"^[0-9]{6}\.[0-9a-f]{32}\.[0-9]{4}$"#, options: .regularExpression) != nil)
        let signIn = try harness.nativeSignIn(
            user: user.id, nonce: "raw nonce ✓", extra: #","realUserStatus":2,"transferSub":"transfer.1""#)
        let identity = try harness.verifier().verify(
            signIn.token, nonce: "raw nonce ✓", authorizationCode: signIn.code, now: Double(harness.now))
        #expect(identity.subject == user.sub)
        #expect(identity.realUserStatus == 2)
        #expect(identity.transferSubject == "transfer.1")
        #expect(identity.email == "jane@example.com")
        #expect(identity.emailVerified == true)
        #expect(identity.isPrivateEmail == nil, "not present when the real address is shared")
        #expect(identity.expiresAt - identity.issuedAt == 600)
        #expect(throws: SignInError.self) { try harness.verifier().verify(signIn.token, nonce: "another nonce", now: Double(harness.now)) }

        // A tampered token fails: one claim changed, the signature kept.
        let parts = signIn.token.split(separator: ".").map(String.init)
        var claims = String(decoding: Base64URL.decode(parts[1])!, as: UTF8.self)
        claims = claims.replacingOccurrences(of: user.sub, with: "000000.00000000000000000000000000000000.0000")
        let tampered = parts[0] + "." + Base64URL.encode(Array(claims.utf8)) + "." + parts[2]
        #expect(throws: SignInError.self) { try harness.verifier().verify(tampered, nonce: "raw nonce ✓", now: Double(harness.now)) }

        // The same user for another team has another sub; the same team keeps it.
        let otherTeam = try EmulatorHarness()
        #expect(try otherTeam.createUser().sub != user.sub)
        #expect(try jwtClaims(of: harness.nativeSignIn(user: user.id).token)["sub"] as? String == user.sub)
        #expect(try jwtClaims(of: harness.nativeSignIn(user: user.id, nonce: nil).token)["nonce"] == nil)
        #expect(try harness.createUser(#"{"emailVerified":false}"#).sub != user.sub)
    }

    @Test("The admin API is off without a secret and refuses a wrong one")
    func adminAccess() throws {
        let off = try EmulatorHarness(adminSecret: false)
        #expect(off.request("POST", "/admin/users", headers: [("Authorization", "Bearer " + EmulatorHarness.adminSecret)]).status == 404)
        let on = try EmulatorHarness()
        #expect(on.request("POST", "/admin/users").status == 401)
        #expect(on.request("POST", "/admin/users", headers: [("Authorization", "Bearer wrong-secret-0123456789")]).status == 401)
        #expect(
            on.request(
                "POST", "/admin/users", headers: [("Authorization", "Bearer " + EmulatorHarness.adminSecret)], body: Array("[1]".utf8)
            ).status == 400)
        try on.admin("GET", "/admin/users/user-unknown", expect: 404)
        try on.admin("POST", "/admin/sign-in", #"{"userId":"x","clientId":"com.unknown"}"#, expect: 400)
    }

    @Test("POST /admin/behaviour makes the endpoints siwa calls fail with Apple's 500 (all, then none); out-of-range values are refused")
    func behaviour() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let signIn = try harness.nativeSignIn(user: user.id)
        try harness.admin("POST", "/admin/behaviour", #"{"failureRate":1}"#)
        let failed = try harness.exchange(signIn.code)
        #expect(failed.status == 500 && failed.body.isEmpty)
        try harness.admin("POST", "/admin/behaviour", #"{"latencyMs":1,"failureRate":0}"#)
        #expect(try harness.exchange(signIn.code).status == 200, "a failed call did not use the code up")
        try harness.admin("POST", "/admin/behaviour", #"{"failureRate":2}"#, expect: 400)
        try harness.admin("POST", "/admin/behaviour", #"{"latencyMs":-1}"#, expect: 400)
    }

    @Test("Revoking consent, deleting the Apple Account and relay forwarding, from the person's side")
    func personSide() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let refresh = try #require(try harness.exchange(harness.nativeSignIn(user: user.id).code).json?["refresh_token"] as? String)
        let shown = try harness.admin("GET", "/admin/users/\(user.id)")
        let clients = try #require(shown["clients"] as? [[String: Any]])
        #expect(clients.first?["refreshTokens"] as? Int == 1)

        try harness.admin("POST", "/admin/users/\(user.id)/revoke", #"{"clientId":"\#(EmulatorHarness.bundleID)"}"#)
        #expect(try harness.refresh(refresh).appleError == "invalid_grant")
        #expect(try harness.nativeSignIn(user: user.id).user != nil)

        let relay = try harness.admin("POST", "/admin/users/\(user.id)/relay", #"{"enabled":false}"#)
        #expect(relay["relayForwarding"] as? Bool == false)

        let again = try #require(try harness.exchange(harness.nativeSignIn(user: user.id).code).json?["refresh_token"] as? String)
        try harness.admin("DELETE", "/admin/users/\(user.id)", expect: 204)
        #expect(try harness.refresh(again).appleError == "invalid_grant")
        try harness.admin("GET", "/admin/users/\(user.id)", expect: 404)
    }

    @Test("Key rotation: a new kid signs, the old key is still served until removed; the current key cannot be removed")
    func keyRotation() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let old = try harness.nativeSignIn(user: user.id)
        let rotated = try harness.admin("POST", "/admin/keys/rotate")
        let newKeyID = try #require(rotated["kid"] as? String)
        let keyIDs = try #require(rotated["keys"] as? [String])
        #expect(keyIDs.count == 2 && keyIDs[0] == newKeyID)
        let fresh = try harness.nativeSignIn(user: user.id)
        #expect(try CompactJWS(fresh.token).header.string("kid") == newKeyID)
        #expect(try harness.verifier().verify(old.token, nonce: "raw-nonce-1", now: Double(harness.now)).keyID == keyIDs[1])
        try harness.admin("DELETE", "/admin/keys/\(newKeyID)", expect: 409)
        try harness.admin("DELETE", "/admin/keys/\(keyIDs[1])", expect: 204)
        #expect(throws: SignInError.self) { try harness.verifier().verify(old.token, nonce: "raw-nonce-1", now: Double(harness.now)) }
        #expect(try harness.verifier().verify(fresh.token, nonce: "raw-nonce-1", now: Double(harness.now)).subject == user.sub)
    }

    @Test("Notifications: signed with the emulator's keys, events as a string (or an object on request), delivered as {\"payload\": JWS}")
    func notifications() throws {
        let server = try TestHTTPServer { _ in .init(status: 200) }
        defer { server.stop() }
        let harness = try EmulatorHarness(notificationURL: server.baseURL + "/webhook/apple")
        let user = try harness.createUser()
        _ = try harness.nativeSignIn(user: user.id, extra: #","hideEmail":true"#)
        let relay = try #require(
            (try harness.admin("GET", "/admin/users/\(user.id)")["clients"] as? [[String: Any]])?.first?["relayAddress"] as? String)
        let verifier = AppleJWSVerifier(keys: try harness.keys())

        for type in ["consent-revoked", "account-delete", "email-disabled", "email-enabled"] {
            let sent = try harness.admin("POST", "/admin/notifications", #"{"type":"\#(type)","userId":"\#(user.id)"}"#)
            #expect(sent["deliveredStatus"] as? Int == 200)
            let payload = try #require(sent["payload"] as? String)
            let claims = try verifier.verifiedClaims(payload).claims
            #expect(claims.keys == ["iss", "aud", "exp", "iat", "jti", "events"], "the members of real notifications, in order")
            #expect(try claims.string("aud") == EmulatorHarness.bundleID)
            let events = try #require(try claims.string("events"), "events is a JSON string, as real notifications carry it")
            let event = try JSONObject(parsing: events)
            #expect(try event.string("type") == type)
            #expect(try event.string("sub") == user.sub)
            #expect(try #require(try event.integer("event_time")) > harness.now * 999, "milliseconds")
            if type.hasPrefix("email-") {
                #expect(try event.string("email") == relay)
                #expect(try event.string("is_private_email") == "true")
            } else {
                #expect(!event.contains("email"))
            }
        }
        let received = server.receivedRequests
        #expect(received.count == 4)
        #expect(
            received.allSatisfy { $0.method == "POST" && $0.path == "/webhook/apple" && $0.headers["content-type"] == "application/json" })
        let body = try #require(try JSONSerialization.jsonObject(with: Data(received[0].body)) as? [String: String])
        #expect(Array(body.keys) == ["payload"])

        let object = try harness.admin(
            "POST", "/admin/notifications",
            #"{"type":"account-deleted","userId":"\#(user.id)","eventsAsObject":true,"eventTimeInSeconds":true,"deliver":false}"#)
        #expect(object["deliveredStatus"] == nil)
        let claims = try verifier.verifiedClaims(try #require(object["payload"] as? String)).claims
        let event = try #require(try claims.object("events"), "events as an object, as the documentation shows")
        #expect(try event.string("type") == "account-deleted")
        #expect(try event.integer("event_time") == harness.now)
        #expect(server.receivedRequests.count == received.count, "deliver: false sends nothing")
    }

    @Test("POST /admin/sign-ins: new people's first sign-ins with codes, each raw nonce hashed into its token, each code exchanged once")
    func bulkSignIns() throws {
        let harness = try EmulatorHarness()
        let answer = try harness.admin("POST", "/admin/sign-ins", #"{"clientId":"\#(EmulatorHarness.bundleID)","count":3}"#)
        let signIns = try #require(answer["signIns"] as? [[String: Any]])
        #expect(signIns.count == 3)
        let verifier = try harness.verifier()
        for signIn in signIns {
            let token = try #require(signIn["identityToken"] as? String)
            let nonce = try #require(signIn["nonce"] as? String)
            let code = try #require(signIn["authorizationCode"] as? String)
            let identity = try verifier.verify(token, nonce: nonce, authorizationCode: code, now: Double(harness.now))
            #expect(identity.subject == signIn["sub"] as? String && signIn["user"] != nil, "a first authorization carries the name")
            #expect(try harness.exchange(code).status == 200)
            #expect(try harness.exchange(code).status == 400, "a code is exchanged once")
        }
        #expect(Set(signIns.compactMap { $0["sub"] as? String }).count == 3, "three people")
        for body in [#"{"clientId":"com.example.other","count":1}"#, #"{"clientId":"\#(EmulatorHarness.bundleID)","count":0}"#] {
            try harness.admin("POST", "/admin/sign-ins", body, expect: 400)
        }
    }

    @Test("With saveChanges off, the state file is written at start (its signing key) and not after changes")
    func unsavedChanges() throws {
        let harness = try EmulatorHarness(saveChanges: false)
        let file = harness.directory + "/state.json"
        let written = try #require(FileManager.default.contents(atPath: file))
        let user = try harness.createUser()
        #expect(try harness.exchange(harness.nativeSignIn(user: user.id).code).status == 200)
        #expect(FileManager.default.contents(atPath: file) == written)
        let restarted = try EmulatorHarness(directory: harness.directory, teamKey: harness.teamKey, saveChanges: false)
        #expect(restarted.request("GET", "/auth/keys").text == harness.request("GET", "/auth/keys").text, "the key read at start")
    }

    @Test("The state file keeps keys, users and authorizations across a restart")
    func persistence() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let refresh = try #require(try harness.exchange(harness.nativeSignIn(user: user.id).code).json?["refresh_token"] as? String)
        let keys = harness.request("GET", "/auth/keys").text
        let restarted = try EmulatorHarness(directory: harness.directory, teamKey: harness.teamKey)
        #expect(restarted.request("GET", "/auth/keys").text == keys)
        #expect(try restarted.refresh(refresh).status == 200)
        #expect(try restarted.admin("GET", "/admin/users/\(user.id)")["sub"] as? String == user.sub)
        let mode = try FileManager.default.attributesOfItem(atPath: harness.directory + "/state.json")[.posixPermissions] as? Int
        #expect(mode == 0o600, "the state holds private keys")
    }
}
