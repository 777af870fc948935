import AppleID
import AppleIDEmulator
import FastCGI
import Foundation
import HTTPClient
import JOSE
import SIWAFixtures
import StrictJSON
import Testing

/// `/auth/token` and `/auth/revoke` against Apple's documented behaviour and real captures.
@Suite struct TokenEndpointTests {
    /// The captured body of Apple's answer to a code exchange (FQAuth, 2022).
    static func capturedExchange() throws -> String {
        struct File: Decodable {
            let success: [Success]
            struct Success: Decodable { let body: String? }
        }
        return try Fixtures.decode(File.self, from: "apple/apple_token_endpoint_responses.json").success[0].body!
    }

    /// Apple's opaque tokens: `a…`/`r…` + 32 hex, `.0.`, five letters, `.`, 22 base64url.
    static func isOpaque(_ token: Any?, kind: Character) -> Bool {
        guard let token = token as? String else { return false }
        return token.range(of: "^\(kind)[0-9a-f]{32}\\.0\\.[a-z]{5}\\.[A-Za-z0-9_-]{22}$", options: .regularExpression) != nil
    }

    @Test("A native code exchange answers exactly like Apple's captured response: members, order, formats, headers")
    func exchangeShape() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let signIn = try harness.nativeSignIn(user: user.id)
        let response = try harness.exchange(signIn.code)
        #expect(response.status == 200)
        #expect(response.contentType == "application/json;charset=ISO-8859-1")
        #expect(response.header("Cache-Control") == "no-store")
        #expect(response.header("Pragma") == "no-cache")
        #expect(memberOrder(response.text) == memberOrder(try Self.capturedExchange()))
        let body = try #require(response.json)
        #expect(Self.isOpaque(body["access_token"], kind: "a"))
        #expect(Self.isOpaque(body["refresh_token"], kind: "r"))
        #expect(body["token_type"] as? String == "Bearer")
        #expect(body["expires_in"] as? Int == 3600)

        // The id_token verifies with siwa's verifier over the emulator's key set, and carries
        // at_hash of the access token, the user's sub and a day's lifetime, as exchanged tokens do.
        let idToken = try #require(body["id_token"] as? String)
        let identity = try harness.verifier(requireNonce: false).verify(idToken, nonce: nil, now: Double(harness.now))
        #expect(identity.subject == user.sub)
        #expect(identity.audience == EmulatorHarness.bundleID)
        let claims = try jwtClaims(of: idToken)
        #expect(claims["at_hash"] as? String == Base64URL.encode(SHA256.hash(Array((body["access_token"] as! String).utf8))[0..<16]))
        #expect((claims["exp"] as! Int) - (claims["iat"] as! Int) == 86_400)
        #expect(claims["email"] as? String == "jane@example.com")
    }

    @Test("A code is single use, lasts five minutes, and is bound to its client and to its redirect_uri")
    func codeRules() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()

        let used = try harness.nativeSignIn(user: user.id).code
        #expect(try harness.exchange(used).status == 200)
        let again = try harness.exchange(used)
        #expect(again.appleError == "invalid_grant")
        #expect(again.json?["error_description"] as? String == "The code has already been used.")

        let late = try harness.nativeSignIn(user: user.id).code
        harness.advance(301)
        #expect(try harness.exchange(late).appleError == "invalid_grant")

        let native = try harness.nativeSignIn(user: user.id).code
        #expect(try harness.exchange(native, client: EmulatorHarness.servicesID).appleError == "invalid_grant", "another client id")
        #expect(
            try harness.exchange(native, redirectURI: EmulatorHarness.redirectURI).appleError == "invalid_grant",
            "redirect_uri for a native code")
        #expect(try harness.exchange(native).status == 200, "a refused attempt does not spend the code")

        #expect(try harness.exchange("c0123456789abcdef0123456789abcdef.0.abcde.AAAAAAAAAAAAAAAAAAAAAA").appleError == "invalid_grant")
    }

    @Test("A web code needs the same redirect_uri as its authorize request")
    func webCodeRedirect() throws {
        let harness = try EmulatorHarness()
        let post = try AuthorizeTests.consent(harness, scope: "name email")
        let code = try #require(post.formFields["code"])
        #expect(try harness.exchange(code, client: EmulatorHarness.servicesID).appleError == "invalid_grant", "no redirect_uri")
        #expect(
            try harness.exchange(code, client: EmulatorHarness.servicesID, redirectURI: "https://app.example.com/other").appleError
                == "invalid_grant")
        #expect(try harness.exchange(code, client: EmulatorHarness.servicesID, redirectURI: EmulatorHarness.redirectURI).status == 200)
    }

    @Test(
        "Client secrets: the right one is accepted; another sub, an expired one, another key or kid, another team, a 7-month one are invalid_client"
    )
    func clientSecrets() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let client = EmulatorHarness.bundleID
        func exchange(secret: String) throws -> Response {
            let code = try harness.nativeSignIn(user: user.id).code
            return harness.post(
                "/auth/token", [("client_id", client), ("client_secret", secret), ("code", code), ("grant_type", "authorization_code")])
        }
        #expect(try exchange(secret: harness.secret(for: client)).status == 200)
        #expect(
            try exchange(secret: harness.secret(for: EmulatorHarness.servicesID)).appleError == "invalid_client", "sub is another client id"
        )
        #expect(
            try exchange(secret: harness.secret(for: client, issuedAt: harness.now - 86_400 - 1)).appleError == "invalid_client", "expired")
        #expect(
            try exchange(secret: harness.secret(for: client, key: P256PrivateKey())).appleError == "invalid_client", "signed by another key"
        )
        #expect(try exchange(secret: harness.secret(for: client, keyID: "OTHERKEY01")).appleError == "invalid_client", "another kid")
        #expect(try exchange(secret: harness.secret(for: client, teamID: "OTHERTEAM1")).appleError == "invalid_client", "another team")
        #expect(try exchange(secret: harness.secret(for: client, lifetime: 180 * 86_400)).status == 200, "180 days is within six months")
        // 15,777,000 s is Apple's limit; ClientSecretFactory refuses more, so build one by hand.
        let header = JSONText.object([("alg", .string("ES256")), ("kid", .string(EmulatorHarness.keyID))])
        let claims = JSONText.object([
            ("iss", .string(EmulatorHarness.teamID)), ("iat", .integer(harness.now)), ("exp", .integer(harness.now + 15_777_001)),
            ("aud", .string("https://appleid.apple.com")), ("sub", .string(client)),
        ])
        let tooLong = try CompactJWS.serialize(header: header, claims: claims, sign: harness.teamKey.signature(for:))
        #expect(try exchange(secret: tooLong).appleError == "invalid_client", "exp more than 6 months after iat")
        #expect(try exchange(secret: "not.a.jwt").appleError == "invalid_client")
    }

    @Test(
        "Every documented error: invalid_request (missing or repeated parameters), unsupported_grant_type, invalid_scope, invalid_client (a JSON body)"
    )
    func malformedRequests() throws {
        let harness = try EmulatorHarness()
        let client = EmulatorHarness.bundleID
        let secret = try harness.secret(for: client)
        #expect(harness.post("/auth/token", [("client_id", client), ("client_secret", secret)]).appleError == "invalid_request")
        #expect(
            harness.post("/auth/token", [("client_secret", secret), ("grant_type", "authorization_code"), ("code", "x")]).appleError
                == "invalid_request")
        #expect(
            harness.post("/auth/token", [("client_id", client), ("grant_type", "authorization_code"), ("code", "x")]).appleError
                == "invalid_request")
        #expect(
            harness.post("/auth/token", [("client_id", client), ("client_secret", secret), ("grant_type", "authorization_code")]).appleError
                == "invalid_request")
        #expect(
            harness.post(
                "/auth/token",
                [
                    ("client_id", client), ("client_id", client), ("client_secret", secret), ("grant_type", "authorization_code"),
                    ("code", "x"),
                ]
            ).appleError == "invalid_request")
        #expect(
            harness.post("/auth/token", [("client_id", client), ("client_secret", secret), ("grant_type", "password")]).appleError
                == "unsupported_grant_type")
        #expect(
            harness.post(
                "/auth/token", [("client_id", client), ("client_secret", secret), ("grant_type", "client_credentials"), ("scope", "email")]
            ).appleError == "invalid_scope")
        #expect(
            harness.post(
                "/auth/token",
                [("client_id", "com.unknown"), ("client_secret", secret), ("grant_type", "refresh_token"), ("refresh_token", "r")]
            ).appleError == "invalid_client")
        #expect(harness.post("/auth/token", [("client_id", client)], contentType: "application/json").appleError == "invalid_client")
        let error = harness.post("/auth/token", [("client_id", client), ("client_secret", secret), ("grant_type", "password")])
        #expect(error.text == #"{"error":"unsupported_grant_type"}"#, "Apple's ErrorResponse shape")
        #expect(error.contentType == "application/json;charset=ISO-8859-1")
        #expect(harness.request("GET", "/auth/token").status == 405)
    }

    @Test("The refresh_token grant answers without a new refresh token; unknown tokens and other clients get invalid_grant")
    func refreshGrant() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let exchanged = try #require(try harness.exchange(harness.nativeSignIn(user: user.id).code).json)
        let refreshToken = try #require(exchanged["refresh_token"] as? String)
        let refreshed = try harness.refresh(refreshToken)
        #expect(refreshed.status == 200)
        #expect(memberOrder(refreshed.text) == ["access_token", "token_type", "expires_in", "id_token"])
        let idToken = try #require(refreshed.json?["id_token"] as? String)
        #expect(try harness.verifier(requireNonce: false).verify(idToken, nonce: nil, now: Double(harness.now)).subject == user.sub)
        #expect(try harness.refresh(refreshToken).status == 200, "a refresh token is reusable")
        #expect(try harness.refresh("r-unknown").appleError == "invalid_grant")
        #expect(try harness.refresh(refreshToken, client: EmulatorHarness.servicesID).appleError == "invalid_grant")
    }

    @Test("Revocation: 200 with no body, then the refresh token is invalid_grant and the next authorization sends the user JSON again")
    func revocation() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let first = try harness.nativeSignIn(user: user.id)
        #expect(first.user != nil)
        let refreshToken = try #require(try harness.exchange(first.code).json?["refresh_token"] as? String)
        #expect(try harness.nativeSignIn(user: user.id).user == nil, "the user JSON comes only the first time")

        #expect(
            try harness.revoke(refreshToken, client: EmulatorHarness.servicesID).appleError == "invalid_grant",
            "another client id cannot revoke")
        #expect(try harness.revoke(refreshToken, hint: "id_token").appleError == "invalid_request")
        let revoked = try harness.revoke(refreshToken)
        #expect(revoked.status == 200)
        #expect(revoked.body.isEmpty)
        #expect(try harness.refresh(refreshToken).appleError == "invalid_grant")
        #expect(try harness.revoke(refreshToken).status == 200, "an already invalid token is 200 too")
        #expect(try harness.revoke("junk", hint: nil).status == 200)
        #expect(try harness.nativeSignIn(user: user.id).user != nil, "consent is asked again")

        // An access token revokes the same authorization.
        let second = try #require(try harness.exchange(harness.nativeSignIn(user: user.id).code).json)
        #expect(try harness.revoke(second["access_token"] as! String, hint: "access_token").status == 200)
        #expect(try harness.refresh(second["refresh_token"] as! String).appleError == "invalid_grant")

        let badSecret = harness.post("/auth/revoke", [("client_id", EmulatorHarness.bundleID), ("client_secret", "x"), ("token", "t")])
        #expect(badSecret.appleError == "invalid_client")
        #expect(
            harness.post(
                "/auth/revoke",
                [("client_id", EmulatorHarness.bundleID), ("client_secret", try harness.secret(for: EmulatorHarness.bundleID))]
            ).appleError == "invalid_request")
    }
}
