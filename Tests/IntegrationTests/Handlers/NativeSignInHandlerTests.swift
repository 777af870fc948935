import Accounts
import FastCGI
import Foundation
import Identity
import JOSE
import MariaDB
import SIWAFixtures
import SIWATestSupport
import Server
import StrictJSON
import Testing

/// `POST /auth/apple`, `/auth/refresh`, `/auth/logout`, `/auth/me`, `/auth/sessions`,
/// `DELETE /auth/sessions/{id}`, `DELETE /auth/account` and `/auth/jwks.json`, in process, with
/// real Apple identity tokens at their own clocks.
@Suite(.serialized) struct NativeSignInHandlerTests {
    @Test("A real identity token signs in at its own moment; the session then refreshes, lists, ends and rejects reuse")
    func signInAndSession() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let signIn = harness.signIn(real.token, user: real.sub, at: real.suggested_fixed_clock, extra: #""device":"Test iPhone""#)
        #expect(signIn.status == 200, "\(signIn.text)")
        let body = try signIn.json()
        #expect(try body.string("tokenType") == "Bearer")
        #expect(try body.bool("isNewUser") == true)
        let access = try #require(try body.string("accessToken"))
        let refresh = try #require(try body.string("refreshToken"))
        #expect(try CompactJWS(access).header.string("alg") == "ES256")
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE sub = ? AND audience = ?", real.sub, real.aud) == 1)
        // Only the SHA-256 of the issued refresh token is stored, never the token.
        let sessionID = try #require(try body.string("sessionId"))
        let stored: [UInt8] = try harness.connection.query("SELECT token_hash FROM refresh_tokens WHERE session_id = ?", sessionID)[0]
            .decode(at: 0)
        #expect(stored == SHA256.hash(Array(refresh.utf8)))
        #expect(try harness.count("SELECT COUNT(*) FROM refresh_tokens WHERE token_hash = ?", Array(refresh.utf8)) == 0)
        // The same token past its `exp` and the leeway is expired at the injected clock.
        #expect(harness.signIn(real.token, at: real.exp + 61).status == 401)
        harness.clock.set(real.suggested_fixed_clock)

        let me = harness.send("GET", "/auth/me", headers: harness.bearer(access))
        #expect(me.status == 200 && me.text.contains(#""sessionId""#))
        let sessions = try harness.send("GET", "/auth/sessions", headers: harness.bearer(access)).json()
        #expect(try sessions.objectArray("sessions")?.first?.string("device") == "Test iPhone")

        let rotated = harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#)
        #expect(rotated.status == 200)
        let lost = try #require(try rotated.json().string("refreshToken"))
        // The answer carrying `lost` did not arrive: the retry within the reuse interval gets a new pair.
        let retried = harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(refresh)"}"#)
        #expect(retried.status == 200)
        #expect(try retried.json().string("sessionId") == sessionID)
        let next = try #require(try retried.json().string("refreshToken"))
        // `lost`, retired by the retry, is a spent token: reuse ends the session.
        let reused = harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(lost)"}"#)
        #expect(reused.status == 401)
        #expect(try reused.json().string("error") == "token_reused")
        #expect(harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"\#(next)"}"#).status == 401, "reuse ended the session")
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(access)).status == 401, "so is its access token")
        #expect(harness.send("POST", "/auth/refresh", json: #"{"refreshToken":"not-one-of-ours"}"#).status == 401)
        #expect(harness.send("POST", "/auth/refresh", json: #"{"token":"x"}"#).status == 400)
        #expect(harness.send("POST", "/auth/refresh", json: "[]").status == 400)
    }

    @Test("Rule 2: the user is the verified token's subject; a `user` that differs is refused and nothing is stored")
    func subjectFromTheTokenOnly() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let other = try AppleFixtures.token("nov-apple_id-AIDOPK1-2019")
        let refused = harness.signIn(real.token, user: other.sub, at: real.suggested_fixed_clock)
        #expect(refused.status == 401)
        #expect(try refused.json().string("error") == "user_mismatch")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities") == 0)
        // A token whose claims were changed to another subject does not verify at all.
        let parts = real.token.split(separator: ".")
        var claims = String(decoding: try #require(Base64URL.decode(parts[1])), as: UTF8.self)
        claims = claims.replacingOccurrences(of: real.sub, with: other.sub)
        let forged = "\(parts[0]).\(Base64URL.encode(Array(claims.utf8))).\(parts[2])"
        #expect(harness.signIn(forged, at: real.suggested_fixed_clock).status == 401)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE sub = ?", other.sub) == 0)
        // The accepted sign-in stores the token's subject, whatever else the body says.
        #expect(harness.signIn(real.token, user: real.sub, at: real.suggested_fixed_clock).status == 200)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE sub = ?", real.sub) == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities") == 1)
    }

    @Test(
        "A Services ID's code is exchanged with the registered redirectUri it came with; unregistered, missing, or with a bundle id's token: 400 invalid_redirect_uri, Apple never called"
    )
    func servicesIDRedirectURI() throws {
        let harness = try HandlerHarness()
        let web = try AppleFixtures.token("nov-apple_id-AIDOPK1-2019")
        let native = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        harness.issued.issue("code-web", subject: web.sub, audience: web.aud)
        harness.issued.issue("code-native", subject: native.sub, audience: native.aud)
        let refusals = [
            harness.signIn(web.token, code: "code-web", at: web.suggested_fixed_clock),
            harness.signIn(web.token, code: "code-web", at: web.suggested_fixed_clock, extra: #""redirectUri":"https://evil.example/cb""#),
            harness.signIn(
                web.token, code: "code-web", at: web.suggested_fixed_clock,
                extra: #""redirectUri":"https://app.example.com/apple-callback/""#),
            harness.signIn(native.token, code: "code-native", at: native.suggested_fixed_clock, extra: HandlerHarness.appRedirectMember),
        ]
        for refused in refusals {
            let code = try refused.json().string("error")
            #expect(refused.status == 400 && code == "invalid_redirect_uri", "\(refused.text)")
        }
        #expect(harness.appleCalls("/auth/token").isEmpty, "Apple was called for a refused redirect URI")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        let signedIn = harness.signIn(web.token, code: "code-web", at: web.suggested_fixed_clock, extra: HandlerHarness.appRedirectMember)
        #expect(signedIn.status == 200, "\(signedIn.text)")
        #expect(harness.appleCalls("/auth/token").map { $0["redirect_uri"] } == [HandlerHarness.appRedirectURI])
    }

    @Test("Bad bodies get 400 or 415 and store nothing; a token for an audience not configured is refused")
    func refusedBodies() throws {
        let harness = try HandlerHarness()
        // The members are read from the strict parse as a `Decodable` reads them: a member that is
        // absent or of another kind is named; null or absent optional members are nil.
        let named: [(String, String, String)] = [
            ("/auth/apple", #"{"nonce":"x"}"#, "`identityToken` is required"),
            ("/auth/apple", #"{"identityToken":7}"#, "`identityToken` has the wrong type"),
            ("/auth/apple", #"{"identityToken":null}"#, "`identityToken` has the wrong type"),
            ("/auth/apple", #"{"identityToken":"x","nonce":[]}"#, "`nonce` has the wrong type"),
            ("/auth/apple", #"{"identityToken":"x","fullName":"Ann"}"#, "`fullName` has the wrong type"),
            ("/auth/apple", #"{"identityToken":"x","fullName":{"givenName":true}}"#, "`fullName.givenName` has the wrong type"),
            ("/auth/refresh", #"{}"#, "`refreshToken` is required"),
            ("/auth/refresh", #"{"refreshToken":{}}"#, "`refreshToken` has the wrong type"),
        ]
        for (path, body, message) in named {
            let response = harness.send("POST", path, json: body)
            #expect(response.status == 400 && (try? response.json().string("message")) == message, "\(body): \(response.text)")
        }
        let nulls = harness.send("POST", "/auth/apple", json: #"{"identityToken":"x","nonce":null,"fullName":null,"device":null}"#)
        #expect(nulls.status == 401, "null optional members are absent ones: \(nulls.text)")
        let long = String(repeating: "a", count: 16_385)
        #expect(harness.send("POST", "/auth/apple", json: #"{"identityToken":"\#(long)"}"#).status == 400)
        let wrongType = harness.worker.respond(
            to: .init(method: "POST", path: "/auth/apple", headers: .init([("content-type", "text/plain")]), body: Array("{}".utf8)))
        #expect(wrongType.status == 415)
        let other = try AppleFixtures.token("gameroasters-YuyXoY-2021")
        let foreign = harness.signIn(other.token, at: other.suggested_fixed_clock)
        #expect(foreign.status == 401 && foreign.text.contains("audienceMismatch"))
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
    }

    @Test("Bodies are strict JSON on every JSON route: duplicates, leading zeros, NUL, a BOM, invalid UTF-8, lone surrogates get 400")
    func strictBodies() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let refresh = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("refreshToken"))
        let bodies: [(String, [UInt8])] = [
            ("/auth/refresh", Array(#"{"refreshToken":"\#(refresh)","refreshToken":"x"}"#.utf8)),
            ("/auth/apple", Array(#"{"identityToken":"\#(real.token)","device":"a","device":"b"}"#.utf8)),
            ("/auth/apple", Array(#"{"identityToken":"\#(real.token)","fullName":{"givenName":007}}"#.utf8)),
            ("/auth/refresh", Array(#"{"refreshToken":"\#(refresh)\#u{0000}"}"#.utf8)),
            ("/auth/refresh", [0xEF, 0xBB, 0xBF] + Array(#"{"refreshToken":"\#(refresh)"}"#.utf8)),
            ("/auth/apple", Array(#"{"identityToken":"\#(real.token)","device":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)),
            ("/auth/apple", Array(#"{"identityToken":"\#(real.token)","device":"\ud800"}"#.utf8)),
            ("/webhook/apple", Array(#"{"payload":"a","payload":"b"}"#.utf8)),
        ]
        for (path, body) in bodies {
            let response = harness.worker.respond(
                to: .init(method: "POST", path: path, headers: .init([("content-type", "application/json")]), body: body))
            #expect(response.status == 400, "\(path) \(String(decoding: body.prefix(60), as: UTF8.self)): \(response.text)")
            #expect(try response.json().string("error") == "invalid_request")
        }
        #expect(try harness.count("SELECT COUNT(*) FROM sessions") == 1, "no body that was refused opened a session")
        #expect(try harness.count("SELECT COUNT(*) FROM refresh_tokens WHERE spent_at IS NOT NULL") == 0, "nor spent a token")
    }

    @Test(
        "Content-Type is read as a media type: JSON with or without a charset, in any case, with spaces and tabs around; application/jsonfoo or other whitespace is not JSON"
    )
    func mediaTypes() throws {
        let harness = try HandlerHarness()
        for (contentType, status) in [
            ("application/json", 401), ("Application/JSON; charset=utf-8", 401), ("application/json;charset=UTF-8", 401),
            (" \tapplication/json\t ; charset=utf-8", 401), ("application/jsonfoo", 415), ("application/json-patch+json", 415),
            ("text/json", 415), ("application/", 415), ("application/json\u{A0}", 415), ("application/json\n", 415),
        ] {
            let response = harness.worker.respond(
                to: .init(
                    method: "POST", path: "/auth/refresh", headers: .init([("content-type", contentType)]),
                    body: Array(#"{"refreshToken":"unknown"}"#.utf8)))
            #expect(response.status == status, "\(contentType): \(response.text)")
        }
    }

    @Test("Sign-out, ending another session, and deleting the account each take effect at once; jwks.json publishes the EC key")
    func sessionsAndDeletion() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let signin = try AppleFixtures.token("fqauth-YuyXoY-2022-signin")
        let first = try harness.signIn(real.token, at: real.suggested_fixed_clock).json()
        let second = try harness.signIn(signin.token, at: signin.suggested_fixed_clock).json()
        let firstAccess = try #require(try first.string("accessToken"))
        let secondAccess = try #require(try second.string("accessToken"))
        #expect(try second.bool("isNewUser") == false, "the same subject signs in to the same user")
        let firstSession = try #require(try first.string("sessionId"))
        #expect(harness.send("DELETE", "/auth/sessions/999999", headers: harness.bearer(secondAccess)).status == 404)
        #expect(harness.send("DELETE", "/auth/sessions/\(firstSession)", headers: harness.bearer(secondAccess)).status == 204)
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(firstAccess)).status == 401)
        let third = try harness.signIn(signin.token, at: signin.suggested_fixed_clock).json()
        let thirdAccess = try #require(try third.string("accessToken"))
        #expect(harness.send("POST", "/auth/logout", headers: harness.bearer(thirdAccess)).status == 204)
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(thirdAccess)).status == 401)
        #expect(harness.send("DELETE", "/auth/account", headers: harness.bearer(secondAccess)).status == 204)
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(secondAccess)).status == 401)
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        let jwks = harness.send("GET", "/auth/jwks.json")
        #expect(jwks.status == 200 && jwks.text.contains(#""kty":"EC""#) && jwks.text.contains(#""alg":"ES256""#))
        #expect(harness.send("GET", "/auth/me").status == 401, "no credentials")
        #expect(harness.send("GET", "/auth/me", headers: [("authorization", "Basic eDp5")]).status == 401)
    }

    @Test("Bearer checks are answered from the session cache; a session ended by another process is refused within a poll")
    func sessionCache() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let grant = try harness.signIn(real.token, at: real.suggested_fixed_clock).json()
        let access = try #require(try grant.string("accessToken"))
        let session = try #require(try grant.string("sessionId").flatMap(UInt64.init))
        // The cache answers once its poller has polled the revocation log (started by the first check).
        let cache = harness.application.core.sessionCache
        let warmed = eventually(within: 2) {
            #expect(harness.send("GET", "/auth/check", headers: harness.bearer(access)).status == 204)
            return cache.hitCount > 0
        }
        #expect(warmed, "checks after the first poll come from the cache")
        // Ended by another process (siwa jobs, siwa users, another host): only the revocation log tells.
        _ = try harness.connection.transaction { try Sessions.revoke(session, reason: "logout", on: harness.connection) }
        let refused = eventually(within: 1) { harness.send("GET", "/auth/check", headers: harness.bearer(access)).status == 401 }
        #expect(refused, "refused within a second (a poll is every 50 ms)")
    }

    @Test(
        "A user inserted with AUTO_INCREMENT inside this process's block of ids (an older siwa, mid-upgrade) makes the next sign-in retry with the next id"
    )
    func idTakenByAnOlderProcess() throws {
        let harness = try HandlerHarness()
        let first = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let second = try AppleFixtures.token("nov-apple_id-AIDOPK1-2019")
        harness.issued.issue("code-first", subject: first.sub, audience: first.aud)
        harness.issued.issue("code-second", subject: second.sub, audience: second.aud)
        #expect(harness.signIn(first.token, code: "code-first", at: first.suggested_fixed_clock).status == 200)
        let firstID: UInt64 = try harness.connection.query("SELECT user_id FROM apple_identities WHERE sub = ?", first.sub)[0].decode(at: 0)
        // The table's AUTO_INCREMENT follows the highest id stored: the next id of this process's block.
        let taken = try harness.connection.execute("INSERT INTO users (id) VALUES (NULL)").lastInsertID
        #expect(taken == firstID + 1)

        let signedIn = harness.signIn(
            second.token, code: "code-second", at: second.suggested_fixed_clock, extra: HandlerHarness.appRedirectMember)
        #expect(signedIn.status == 200, "\(signedIn.text)")
        let secondID: UInt64 = try harness.connection.query("SELECT user_id FROM apple_identities WHERE sub = ?", second.sub)[0].decode(
            at: 0)
        #expect(secondID == firstID + 2, "the duplicate id was retried with the block's next one")
        let reservedUpTo: UInt64 = try harness.connection.query("SELECT next_id FROM id_blocks WHERE table_name = 'users'")[0].decode(at: 0)
        #expect(reservedUpTo == firstID + 1000, "both users came from the one block reserved at the first sign-in")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 3, "the row of the other process is kept")
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE user_id = ?", taken) == 0)
    }

    @Test("Health reports the database and Apple's keys")
    func health() throws {
        let harness = try HandlerHarness()
        let health = harness.send("GET", "/health")
        #expect(health.status == 200 && health.text == #"{"appleKeys":"ok","database":"ok","status":"ok"}"#)
    }
}
