import Accounts
import Dispatch
import FastCGI
import Foundation
import HTTPClient
import Identity
import JOSE
import MariaDB
import SIWAFixtures
import SIWATestSupport
import Server
import StrictJSON
import Synchronization
import Testing
import WebForms

/// The web flow, Apple's notifications, the daily validation and revocation with the minting
/// client id, and sync, in process.
@Suite(.serialized) struct AppleFlowHandlerTests {
    /// An identity token for the web flow in Apple's format, signed with the harness's web key.
    func webToken(_ harness: HandlerHarness, sub: String, nonceHash: String, code: String, audience: String = HandlerHarness.servicesID)
        throws -> String
    {
        harness.issued.issue(code, subject: sub, audience: audience)
        let now = Int64(harness.clock.now())
        let claims = JSONText.object([
            ("iss", .string("https://appleid.apple.com")), ("aud", .string(audience)), ("exp", .integer(now + 600)),
            ("iat", .integer(now)), ("sub", .string(sub)), ("nonce", .string(nonceHash)),
            ("c_hash", .string(Base64URL.encode(SHA256.hash(Array(code.utf8)).prefix(16)))),
            ("email", .string("web@privaterelay.appleid.com")), ("email_verified", .bool(true)), ("is_private_email", .bool(true)),
            ("auth_time", .integer(now)), ("nonce_supported", .bool(true)),
        ])
        let header = JSONText.object([("kid", .string(HandlerHarness.webKeyID)), ("alg", .string("RS256"))])
        return try CompactJWS.serialize(header: header, claims: claims, sign: harness.webKey.signature(for:))
    }

    /// Starts a web sign-in: the binding cookie, and `state` and the nonce's hash from Apple's URL.
    func start(_ harness: HandlerHarness, returnTo: String = "/account") throws -> (binding: String, state: String, nonceHash: String) {
        let started = harness.send("GET", "/auth/web/start", query: "return_to=" + FormEncoding.encode(returnTo))
        #expect(started.status == 302)
        let location = try #require(started.header("Location"))
        #expect(location.hasPrefix(harness.apple.baseURL + "/auth/authorize?"))
        let query = try #require(FormEncoding.fields(String(location.split(separator: "?", maxSplits: 1)[1])))
        func field(_ name: String) -> String? { query.first { $0.0 == name }?.1 }
        #expect(field("client_id") == HandlerHarness.servicesID && field("response_mode") == "form_post")
        return (try #require(started.cookie(Cookies.binding)), try #require(field("state")), try #require(field("nonce")))
    }

    func callback(_ harness: HandlerHarness, state: String, token: String, code: String) -> Response {
        harness.send("POST", "/auth/callback", form: "state=\(state)&code=\(code)&id_token=\(token)")
    }

    @Test(
        "Rule 6: the web sign-in completes only in the browser that started it, state and nonce server side; cookie writes need our Origin")
    func webSignInBoundToTheBrowser() throws {
        let harness = try HandlerHarness()
        // Another browser completes it: refused, no session.
        var (binding, state, nonceHash) = try start(harness)
        var response = callback(
            harness, state: state, token: try webToken(harness, sub: "web.1", nonceHash: nonceHash, code: "c1"), code: "c1")
        #expect(response.status == 303)
        var handle = try #require(response.header("Location")?.components(separatedBy: "handle=").last)
        let elsewhere = harness.send(
            "GET", "/auth/web/complete", query: "handle=" + handle, headers: [("cookie", "\(Cookies.binding)=other")])
        #expect(elsewhere.status == 403 && elsewhere.cookie(Cookies.session) == nil)
        #expect(
            harness.send("GET", "/auth/web/complete", query: "handle=" + handle, headers: [("cookie", "\(Cookies.binding)=\(binding)")])
                .status
                == 400, "the handle was spent by the refused attempt")
        #expect(try harness.count("SELECT COUNT(*) FROM sessions") == 0)

        // A token with another nonce than the one stored for this state: back with an error, no user.
        (binding, state, nonceHash) = try start(harness)
        let otherNonce = SHA256.hex(Array("not the stored nonce".utf8))
        response = callback(
            harness, state: state, token: try webToken(harness, sub: "web.2", nonceHash: otherNonce, code: "c2"), code: "c2")
        handle = try #require(response.header("Location")?.components(separatedBy: "handle=").last)
        let failed = harness.send(
            "GET", "/auth/web/complete", query: "handle=" + handle, headers: [("cookie", "\(Cookies.binding)=\(binding)")])
        #expect(failed.status == 303 && failed.header("Location") == "/account?sign_in_error=invalid_token")
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE sub = 'web.2'") == 0)

        // The browser that started it: signed in with a cookie session.
        (binding, state, nonceHash) = try start(harness)
        response = callback(harness, state: state, token: try webToken(harness, sub: "web.3", nonceHash: nonceHash, code: "c3"), code: "c3")
        #expect(callback(harness, state: state, token: "x", code: "c3").status == 400, "a state is used once")
        handle = try #require(response.header("Location")?.components(separatedBy: "handle=").last)
        let done = harness.send(
            "GET", "/auth/web/complete", query: "handle=" + handle, headers: [("cookie", "\(Cookies.binding)=\(binding)")])
        #expect(done.status == 303 && done.header("Location") == "/account")
        let session = try #require(done.cookie(Cookies.session))
        let cookie = [("cookie", "\(Cookies.session)=\(session)")]
        #expect(harness.send("GET", "/auth/me", headers: cookie).status == 200)
        // The exchange used the Services ID and the callback URL.
        let exchange = try #require(harness.appleCalls("/auth/token").last)
        #expect(exchange["client_id"] == HandlerHarness.servicesID)
        #expect(exchange["redirect_uri"] == HandlerHarness.publicURL + "/auth/callback")
        // nginx's auth_request check: the cookie's ids; a protected write (`method`) needs our Origin too.
        let checked = harness.send("GET", "/auth/check", headers: cookie)
        #expect(checked.status == 204 && checked.header("X-Siwa-User-Id") != nil && checked.header("X-Siwa-Session-Id") != nil)
        #expect(harness.send("GET", "/auth/check", query: "method=POST", headers: cookie).status == 403)
        #expect(
            harness.send("GET", "/auth/check", query: "method=POST", headers: cookie + [("origin", HandlerHarness.publicURL)]).status == 204
        )
        #expect(harness.send("GET", "/auth/check", query: "method=post", headers: cookie).status == 400)
        #expect(harness.send("GET", "/auth/check").status == 401)
        // A cookie-authenticated write from another origin, or none, is refused; ours passes.
        #expect(harness.send("POST", "/auth/logout", headers: cookie).status == 403)
        #expect(harness.send("POST", "/auth/logout", headers: cookie + [("origin", "https://evil.example")]).status == 403)
        #expect(harness.send("GET", "/auth/me", headers: cookie).status == 200)
        #expect(harness.send("POST", "/auth/logout", headers: cookie + [("origin", HandlerHarness.publicURL)]).status == 204)
        #expect(harness.send("GET", "/auth/me", headers: cookie).status == 401)
        // `return_to` is a path on this site only.
        #expect(harness.send("GET", "/auth/web/start", query: "return_to=https://evil.example/").status == 400)
        #expect(harness.send("GET", "/auth/web/start", query: "return_to=//evil.example").status == 400)
    }

    @Test("An authorization code belongs to its identity token: A's token (no c_hash) with B's code is refused, nothing stored")
    func codeOfAnotherIdentity() throws {
        let harness = try HandlerHarness()
        let alice = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let cHash = try CompactJWS(alice.token).decodePayload().string("c_hash")
        #expect(cHash == nil, "a token without c_hash")
        harness.issued.issue("code-of-bob", subject: "001234.bob.0001", audience: alice.aud)
        harness.issued.issue("code-for-web", subject: alice.sub, audience: HandlerHarness.servicesID)
        for code in ["code-of-bob", "code-for-web"] {
            let refused = harness.signIn(alice.token, code: code, at: alice.suggested_fixed_clock)
            #expect(refused.status == 401, "\(code): \(refused.text)")
            #expect(try refused.json().string("error") == "code_mismatch")
        }
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities") == 0)
        // The refresh tokens those exchanges got are nobody's here: queued for revocation, and
        // revoked at Apple by the next jobs pass, with the client id they were exchanged with.
        #expect(try harness.count("SELECT COUNT(*) FROM apple_revocations") == 2)
        #expect(try #require(try harness.jobs()).runOnce().revoked == 2)
        #expect(harness.appleCalls("/auth/revoke").map { $0["client_id"] ?? "" } == [alice.aud, alice.aud])
        harness.issued.issue("code-of-alice", subject: alice.sub, audience: alice.aud)
        #expect(harness.signIn(alice.token, code: "code-of-alice", at: alice.suggested_fixed_clock).status == 200)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_tokens") == 1)
        // Once Alice has an account here, a mismatched code of hers is not revoked: that would end
        // her authorization at Apple, which her account relies on.
        harness.issued.issue("code-for-web-2", subject: alice.sub, audience: HandlerHarness.servicesID)
        #expect(harness.signIn(alice.token, code: "code-for-web-2", at: alice.suggested_fixed_clock).status == 401)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_revocations") == 2)
    }

    @Test(
        "Apple failing (500, then hanging) a sign-in with a code: 503, and the same request signs in once Apple is back; a replay after that is nonce_reused"
    )
    func retryAfterAppleOutage() throws {
        let harness = try HandlerHarness(environment: ["SIWA_APPLE_TIMEOUT": "1", "SIWA_APPLE_UNREACHABLE_COOLDOWN": "5"])
        let nonce = "nonce-through-an-outage"
        let token = try webToken(
            harness, sub: "outage.1", nonceHash: SHA256.hex(Array(nonce.utf8)), code: "outage-code", audience: HandlerHarness.bundleID)
        let start = harness.clock.now()
        let body = #"{"identityToken":"\#(token)","authorizationCode":"outage-code","nonce":"\#(nonce)"}"#
        func send(at offset: Double) -> (Int, String) {
            harness.clock.set(start + offset)
            let response = harness.send("POST", "/auth/apple", json: body)
            return (response.status, (try? response.json().string("error")) ?? "")
        }
        harness.issued.failing.store(true, ordering: .relaxed)
        #expect(send(at: 0) == (503, "apple_unavailable"))
        harness.issued.failing.store(false, ordering: .relaxed)
        harness.issued.hanging.store(true, ordering: .relaxed)
        #expect(send(at: 6) == (503, "apple_unavailable"))
        // During the cooldown siwa does not call Apple, and the nonce stays free as well.
        #expect(send(at: 7) == (503, "apple_unavailable"))
        harness.issued.hanging.store(false, ordering: .relaxed)
        #expect(send(at: 13) == (200, ""))
        #expect(send(at: 14) == (401, "nonce_reused"))
        #expect(harness.appleCalls("/auth/token").count == 3, "the failure, the hang and the sign-in; never the replay")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 1)
    }

    @Test("A hanging Apple: the exchange fails with 503 and Retry-After; during the cooldown no call is made; other routes answer")
    func hangingApple() throws {
        let harness = try HandlerHarness(environment: ["SIWA_APPLE_TIMEOUT": "1", "SIWA_APPLE_UNREACHABLE_COOLDOWN": "5"])
        let alice = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        harness.issued.issue("code-1", subject: alice.sub, audience: alice.aud)
        harness.issued.issue("code-2", subject: alice.sub, audience: alice.aud)
        harness.issued.hanging.store(true, ordering: .relaxed)
        let first = harness.signIn(alice.token, code: "code-1", at: alice.suggested_fixed_clock)
        #expect(first.status == 503 && first.header("Retry-After") == "5", "\(first.status) \(first.text)")
        #expect(try first.json().string("error") == "apple_unavailable")
        let second = harness.signIn(alice.token, code: "code-2", at: alice.suggested_fixed_clock + 1)
        #expect(second.status == 503)
        #expect(harness.appleCalls("/auth/token").count == 1, "the second sign-in never waited for Apple")
        #expect(harness.send("GET", "/health").status == 200, "routes that do not call Apple answer")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 0)
        // After the cooldown, with Apple answering again, the same sign-in goes through.
        harness.issued.hanging.store(false, ordering: .relaxed)
        let third = harness.signIn(alice.token, code: "code-2", at: alice.suggested_fixed_clock + 6)
        #expect(third.status == 200, "\(third.text)")
    }

    @Test("The web flow's errors are styled pages for the browser, never JSON: a bad return_to, an unknown or missing handle")
    func browserErrorPages() throws {
        let harness = try HandlerHarness()
        for (path, query, status) in [
            ("/auth/web/start", "return_to=//evil.example", 400), ("/auth/web/complete", "handle=unknown", 400),
            ("/auth/web/complete", "", 400),
        ] {
            let response = harness.send("GET", path, query: query)
            #expect(response.status == status, "\(path)?\(query)")
            #expect(response.contentType.hasPrefix("text/html"), "\(path)?\(query): \(response.contentType)")
            #expect(response.text.contains(#"<link rel="stylesheet" href="/app.css">"#) && !response.text.hasPrefix("{"))
        }
        #expect(harness.send("GET", "/auth/me").contentType == "application/json", "the API stays JSON")
    }

    @Test("Rule 9: each Apple token is validated and revoked with the client id that minted it (a bundle id and the Services ID)")
    func mintingClientID() throws {
        let harness = try HandlerHarness()
        let native = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let web = try AppleFixtures.token("nov-apple_id-AIDOPK1-2019")
        #expect(native.aud == HandlerHarness.bundleID && web.aud == HandlerHarness.servicesID)
        harness.issued.issue("code-native", subject: native.sub, audience: native.aud)
        harness.issued.issue("code-web", subject: web.sub, audience: web.aud)
        let first = harness.signIn(native.token, code: "code-native", at: native.suggested_fixed_clock)
        let second = harness.signIn(
            web.token, code: "code-web", at: web.suggested_fixed_clock, extra: HandlerHarness.appRedirectMember)
        #expect(first.status == 200 && second.status == 200, "\(first.text) \(second.text)")
        #expect(
            harness.appleCalls("/auth/token").map { $0["client_id"] } == [native.aud, web.aud], "each code exchanged with its token's aud")
        #expect(
            harness.appleCalls("/auth/token").map { $0["redirect_uri"] } == [nil, HandlerHarness.appRedirectURI],
            "a bundle id's code without redirect_uri, the Services ID's with the app's registered one")
        #expect(try harness.count("SELECT COUNT(*) FROM apple_tokens") == 2)

        // The daily validation of both.
        _ = try harness.connection.execute("UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND")
        let jobs = try #require(try harness.jobs())
        #expect(try jobs.runOnce().validated == 2)
        let validations = harness.appleCalls("/auth/token").filter { $0["grant_type"] == "refresh_token" }
        #expect(validations.count == 2)
        for call in validations {
            let clientID = try #require(call["client_id"])
            #expect(call["refresh_token"]?.hasPrefix("r.\(clientID).") == true, "the token minted for \(clientID) is validated with it")
            #expect(try CompactJWS(try #require(call["client_secret"])).decodePayload().string("sub") == clientID)
        }

        // Deleting both accounts revokes both tokens, each with its own client id.
        for (response, time) in [(first, native.suggested_fixed_clock), (second, web.suggested_fixed_clock)] {
            let access = try #require(try response.json().string("accessToken"))
            harness.clock.set(time)
            #expect(harness.send("DELETE", "/auth/account", headers: harness.bearer(access)).status == 204)
        }
        #expect(try jobs.runOnce().revoked == 2)
        let revocations = harness.appleCalls("/auth/revoke")
        #expect(Set(revocations.compactMap { $0["client_id"] }) == [native.aud, web.aud])
        for call in revocations {
            let clientID = try #require(call["client_id"])
            #expect(call["token"]?.hasPrefix("r.\(clientID).") == true && call["token_type_hint"] == "refresh_token")
        }
    }

    @Test(
        "One person signed in with the app and on the web holds a token per client id: Apple refusing one ends only its sessions; deletion revokes each with its own client id"
    )
    func onePersonTwoClients() throws {
        let harness = try HandlerHarness()
        let sub = "001234.both.0001"
        let nonce = "app-nonce"
        func signInOnTheWeb(code: String) throws -> [(String, String)] {
            let (binding, state, nonceHash) = try start(harness)
            let token = try webToken(harness, sub: sub, nonceHash: nonceHash, code: code)
            let handle = try #require(
                callback(harness, state: state, token: token, code: code).header("Location")?.components(separatedBy: "handle=").last)
            let done = harness.send(
                "GET", "/auth/web/complete", query: "handle=" + handle, headers: [("cookie", "\(Cookies.binding)=\(binding)")])
            return [("cookie", "\(Cookies.session)=\(try #require(done.cookie(Cookies.session)))")]
        }
        let appToken = try webToken(
            harness, sub: sub, nonceHash: SHA256.hex(Array(nonce.utf8)), code: "code-app", audience: HandlerHarness.bundleID)
        let native = harness.signIn(appToken, code: "code-app", at: harness.clock.now(), extra: #""nonce":"\#(nonce)""#)
        #expect(native.status == 200, "\(native.text)")
        let access = harness.bearer(try #require(try native.json().string("accessToken")))
        let web = try signInOnTheWeb(code: "code-web")
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 1, "one person")
        #expect(try harness.count("SELECT COUNT(DISTINCT client_id) FROM apple_tokens") == 2, "the web sign-in kept the app's token")

        // Apple refuses the web's token at the daily validation: only the web session ends.
        harness.issued.refuseRefreshTokens(of: HandlerHarness.servicesID)
        _ = try harness.connection.execute("UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND")
        let jobs = try #require(try harness.jobs())
        let summary = try jobs.runOnce()
        #expect(summary.validated == 1 && summary.consentRevoked == 1, "\(summary)")
        #expect(harness.send("GET", "/auth/me", headers: web).status == 401, "the web session ended")
        #expect(harness.send("GET", "/auth/me", headers: access).status == 200, "the app's session goes on")
        #expect(try harness.count("SELECT COUNT(*) FROM apple_tokens WHERE client_id = \(HandlerHarness.bundleID)") == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_identities WHERE consent_state = 'active'") == 1)

        // Signed in on the web again, then the account deleted: both tokens revoked, each with its own client id.
        _ = try signInOnTheWeb(code: "code-web-2")
        #expect(harness.send("DELETE", "/auth/account", headers: access).status == 204)
        #expect(try jobs.runOnce().revoked == 2)
        let revoked = harness.appleCalls("/auth/revoke").map { "\($0["client_id"] ?? "") \($0["token"] ?? "")" }.sorted()
        #expect(revoked.count == 2)
        #expect(revoked.first?.hasPrefix("\(HandlerHarness.bundleID) r.\(HandlerHarness.bundleID).") == true, "\(revoked)")
        #expect(revoked.last?.hasPrefix("\(HandlerHarness.servicesID) r.\(HandlerHarness.servicesID).") == true, "\(revoked)")
    }

    /// Sends one native sign-in `body` on eight worker threads at once.
    /// - Returns: each answer's status, and its error code when it is not 200, sorted.
    func signInOnEightWorkers(_ harness: HandlerHarness, body: String) -> [String] {
        let answers = Mutex<[String]>([])
        let application = harness.application
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            let worker = application.makeWorker(index: index + 1)
            defer { worker.close() }
            let response = worker.respond(
                to: Request(
                    method: "POST", path: "/auth/apple", headers: HTTPHeaders([("content-type", "application/json")]),
                    body: Array(body.utf8)))
            let error = response.status == 200 ? "" : " " + ((try? response.json().string("error")) ?? response.text)
            answers.withLock { $0.append("\(response.status)\(error)") }
        }
        return answers.withLock { $0.sorted() }
    }

    @Test("Concurrent replays of one token, code and nonce on eight worker threads reach Apple once; one signs in")
    func concurrentReplays() throws {
        let harness = try HandlerHarness()
        let nonce = "replayed-nonce"
        let token = try webToken(
            harness, sub: "replay.1", nonceHash: SHA256.hex(Array(nonce.utf8)), code: "replayed-code", audience: HandlerHarness.bundleID)
        let answers = signInOnEightWorkers(
            harness, body: #"{"identityToken":"\#(token)","authorizationCode":"replayed-code","nonce":"\#(nonce)"}"#)
        #expect(answers == ["200"] + Array(repeating: "401 nonce_reused", count: 7))
        #expect(harness.appleCalls("/auth/token").count == 1, "a replay never reaches Apple")
        #expect(try harness.count("SELECT COUNT(*) FROM sessions") == 1)
    }

    @Test(
        "Concurrent replays of one token and nonce without a code, claimed inside the sign-in's transaction: one signs in, seven get nonce_reused and store nothing"
    )
    func concurrentReplaysWithoutCode() throws {
        let harness = try HandlerHarness()
        let nonce = "replayed-nonce-without-code"
        let token = try webToken(
            harness, sub: "replay.2", nonceHash: SHA256.hex(Array(nonce.utf8)), code: "unused-code", audience: HandlerHarness.bundleID)
        let answers = signInOnEightWorkers(harness, body: #"{"identityToken":"\#(token)","nonce":"\#(nonce)"}"#)
        #expect(answers == ["200"] + Array(repeating: "401 nonce_reused", count: 7))
        #expect(harness.appleCalls("/auth/token").isEmpty)
        #expect(try harness.count("SELECT COUNT(*) FROM users") == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM sessions") == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM used_nonces") == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM audit_events WHERE event_type = 'sign_in'") == 1)
    }

    @Test("A hanging Apple holds neither a jobs pass nor the other kind: each kind stops at its first unreachable call")
    func jobsWithHangingApple() throws {
        let harness = try HandlerHarness(environment: ["SIWA_APPLE_TIMEOUT": "1"])
        let native = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let web = try AppleFixtures.token("nov-apple_id-AIDOPK1-2019")
        harness.issued.issue("code-native", subject: native.sub, audience: native.aud)
        harness.issued.issue("code-web", subject: web.sub, audience: web.aud)
        let first = harness.signIn(native.token, code: "code-native", at: native.suggested_fixed_clock)
        #expect(
            harness.signIn(web.token, code: "code-web", at: web.suggested_fixed_clock, extra: HandlerHarness.appRedirectMember).status
                == 200)
        // Three revocations queued (the deleted account's token, twice more), one validation due.
        harness.clock.set(native.suggested_fixed_clock)
        let access = try #require(try first.json().string("accessToken"))
        #expect(harness.send("DELETE", "/auth/account", headers: harness.bearer(access)).status == 204)
        for _ in 0..<2 {
            _ = try harness.connection.execute(
                """
                INSERT INTO apple_revocations (client_id, token, token_key_id, token_type_hint)
                SELECT client_id, token, token_key_id, token_type_hint FROM apple_revocations LIMIT 1
                """)
        }
        _ = try harness.connection.execute("UPDATE apple_tokens SET next_validation_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND")

        harness.issued.hanging.store(true, ordering: .relaxed)
        let summary = try #require(try harness.jobs()).runOnce()
        #expect(summary.revocationsFailed == 1 && summary.validationsFailed == 1, "\(summary)")
        #expect(harness.appleCalls("/auth/revoke").count == 1, "the other revocations wait for the next pass")
        #expect(harness.appleCalls("/auth/token").filter { $0["grant_type"] == "refresh_token" }.count == 1)
        #expect(try harness.count("SELECT COUNT(*) FROM apple_revocations WHERE attempts = 0") == 2, "not claimed, their turn kept")

        harness.issued.hanging.store(false, ordering: .relaxed)
        _ = try harness.connection.execute("UPDATE apple_revocations SET next_attempt_at = UTC_TIMESTAMP(3) - INTERVAL 1 SECOND")
        #expect(try #require(try harness.jobs()).runOnce().revoked == 3)
    }

    @Test("A real consent-revoked notification at its own clock ends the user's sessions once; a replay or a forged one changes nothing")
    func notification() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signin")
        let signIn = harness.signIn(real.token, at: real.suggested_fixed_clock)
        let access = try #require(try signIn.json().string("accessToken"))
        let notification = try AppleFixtures.notification("notif-fqauth-consent-revoked-2022")
        harness.clock.set(notification.suggested_fixed_clock)
        let forged = notification.payload_jwt.dropLast(4) + "AAAA"
        #expect(harness.send("POST", "/webhook/apple", json: #"{"payload":"\#(forged)"}"#).status == 401)
        #expect(try harness.count("SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL") == 1)
        let handled = harness.send("POST", "/webhook/apple", json: #"{"payload":"\#(notification.payload_jwt)"}"#)
        #expect(handled.status == 200 && handled.text == #"{"status":"processed"}"#)
        #expect(try harness.count("SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL") == 0)
        harness.clock.set(real.suggested_fixed_clock)
        #expect(harness.send("GET", "/auth/me", headers: harness.bearer(access)).status == 401)
        harness.clock.set(notification.suggested_fixed_clock)
        let replay = harness.send("POST", "/webhook/apple", json: #"{"payload":"\#(notification.payload_jwt)"}"#)
        #expect(replay.status == 200 && replay.text == #"{"status":"duplicate"}"#)
        harness.clock.set(notification.suggested_fixed_clock + 86_400 * 30)
        #expect(harness.send("POST", "/webhook/apple", json: #"{"payload":"\#(notification.payload_jwt)"}"#).status == 401, "expired")
        #expect(harness.send("POST", "/webhook/apple", json: #"{"data":1}"#).status == 400)
    }

    @Test("Sync answers the delta to a Bearer caller, refuses bad bodies naming the field, and nothing after the session ends")
    func sync() throws {
        let harness = try HandlerHarness()
        let real = try AppleFixtures.token("fqauth-YuyXoY-2022-signup")
        let access = try #require(try harness.signIn(real.token, at: real.suggested_fixed_clock).json().string("accessToken"))
        let body = #"{"progress":[{"beliefSystemId":"b","lessonId":"l1","status":"completed","score":3,"earnedXp":5,"completedAt":1000}]}"#
        let synced = harness.send("POST", "/sync", json: body, headers: harness.bearer(access))
        #expect(synced.status == 200)
        #expect(try synced.json().string("cursor")?.hasPrefix("1~") == true, "the version, then the tag that binds it to the user")
        let bad = harness.send("POST", "/sync", json: #"{"progress":[{"lessonId":"l1"}]}"#, headers: harness.bearer(access))
        #expect(bad.status == 400 && bad.text.contains("progress[0].beliefSystemId"))
        #expect(harness.send("POST", "/sync", json: body).status == 401)
        #expect(harness.send("POST", "/auth/logout", headers: harness.bearer(access)).status == 204)
        #expect(harness.send("POST", "/sync", json: body, headers: harness.bearer(access)).status == 401)
    }
}
