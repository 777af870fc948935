import AppleID
import AppleIDEmulator
import FastCGI
import Foundation
import HTTPClient
import JOSE
import SIWAFixtures
import StrictJSON
import Testing
import WebForms

/// `/auth/authorize`: request checks, the consent page and the form post back to the client.
@Suite struct AuthorizeTests {
    static func query(_ fields: [(String, String)]) -> String {
        fields.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }.joined(separator: "&")
    }

    static func webRequest(scope: String = "name email", state: String = "state-1", nonce: String = "nonce-1", mode: String = "form_post")
        -> [(String, String)]
    {
        [
            ("client_id", EmulatorHarness.servicesID), ("redirect_uri", EmulatorHarness.redirectURI), ("response_type", "code id_token"),
            ("response_mode", mode), ("scope", scope), ("state", state), ("nonce", nonce),
        ]
    }

    /// Opens the consent page and answers it; returns the emulator's answer to the client.
    static func consent(
        _ harness: EmulatorHarness, scope: String = "name email", action: String = "continue", user: String = "new",
        emailChoice: String = "share", request: [(String, String)]? = nil
    ) throws -> Response {
        let page = harness.request("GET", "/auth/authorize", query: query(request ?? webRequest(scope: scope)))
        #expect(page.status == 200, "\(page.text)")
        var fields = page.formFields.map { ($0.key, $0.value) }
        fields += [
            ("action", action), ("user_id", user), ("email_choice", emailChoice), ("first_name", "Jane"), ("last_name", "Appleseed"),
            ("email", "jane@example.com"),
        ]
        return harness.post("/auth/authorize", fields)
    }

    @Test("Requests Apple refuses get an error page, never a redirect")
    func refusedRequests() throws {
        let harness = try EmulatorHarness()
        func status(_ change: (inout [(String, String)]) -> Void) -> (Int, String) {
            var fields = Self.webRequest()
            change(&fields)
            let response = harness.request("GET", "/auth/authorize", query: Self.query(fields))
            #expect(response.header("Location") == nil)
            return (response.status, response.text)
        }
        func replace(_ name: String, _ value: String?) -> (inout [(String, String)]) -> Void {
            { fields in
                fields.removeAll { $0.0 == name }
                if let value { fields.append((name, value)) }
            }
        }
        #expect(status(replace("client_id", "com.unknown")).1.contains("invalid_client"))
        #expect(
            status(replace("client_id", EmulatorHarness.bundleID)).1.contains("Invalid web redirect url"), "a bundle id has no return URLs")
        #expect(status(replace("redirect_uri", "https://evil.example/cb")).1.contains("Invalid web redirect url"))
        #expect(status(replace("redirect_uri", nil)).0 == 400)
        #expect(status(replace("response_type", "id_token")).1.contains("unsupported_response_type"), "id_token alone is unsupported")
        #expect(status(replace("response_type", "token")).0 == 400)
        #expect(status(replace("response_mode", "query")).1.contains("form_post"), "scopes need form_post")
        #expect(status(replace("scope", "name phone")).1.contains("invalid_scope"))
        #expect(status(replace("response_mode", "web_post")).0 == 400)
        #expect(status(replace("response_mode", "web_message")).0 == 200, "Sign in with Apple JS's popup")
        #expect(status { _ in }.0 == 200)
    }

    @Test("The popup of Sign in with Apple JS (web_message) posts SignInResponseI to its opener, for the redirect URI's origin only")
    func webMessage() throws {
        let harness = try EmulatorHarness()
        let answer = try Self.consent(harness, request: Self.webRequest(mode: "web_message"))
        #expect(answer.status == 200 && answer.header("Location") == nil)
        let redirect = try #require(URL(string: EmulatorHarness.redirectURI))
        let origin = "\(redirect.scheme ?? "")://\(redirect.host ?? "")" + (redirect.port.map { ":\($0)" } ?? "")
        #expect(answer.text.contains("window.opener.postMessage(") && answer.text.contains(#", "\#(origin)")"#), "\(answer.text)")
        for member in [#""method":"oauthDone""#, #""authorization":{"code":""#, #""id_token":""#, #""state":"state-1""#, #""user":{"#] {
            #expect(answer.text.contains(member), "\(member)")
        }
        let cancelled = try Self.consent(harness, action: "cancel", request: Self.webRequest(mode: "web_message"))
        #expect(cancelled.text.contains(#""data":{"error":"user_cancelled_authorize"}"#), "\(cancelled.text)")
        let script = harness.request("GET", "/appleauth/static/jsapi/appleid/1/en_US/appleid.auth.js")
        #expect(script.status == 200 && script.contentType.hasPrefix("application/javascript"))
        #expect(script.text.contains("AppleIDSignInOnSuccess") && script.text.contains("window.AppleID"))
    }

    @Test("Continue form-posts code, id_token, state and, the first time only, the user JSON shaped like Apple's")
    func continueFirstAndSecondTime() throws {
        let harness = try EmulatorHarness()
        let first = try Self.consent(harness)
        #expect(first.status == 200)
        #expect(first.text.contains(#"<form method="post" action="https://app.example.com/auth/callback">"#))
        #expect(first.text.contains("document.forms[0].submit()"))
        let fields = first.formFields
        #expect(Set(fields.keys) == ["code", "id_token", "state", "user"])
        #expect(fields["state"] == "state-1")
        #expect(TokenEndpointTests.isOpaque(fields["code"], kind: "c"))

        // The user member has the captured shape: {"name":{"firstName","lastName"},"email"}.
        struct Captured: Decodable {
            let examples: [Example]
            struct Example: Decodable { let user_json: String? }
        }
        let captured = try #require(try Fixtures.decode(Captured.self, from: "apple/apple_form_post_user.json").examples[0].user_json)
        #expect(memberOrder(try #require(fields["user"])) == memberOrder(captured))
        let user = try #require(try JSONSerialization.jsonObject(with: Data(fields["user"]!.utf8)) as? [String: Any])
        #expect((user["name"] as? [String: String]) == ["firstName": "Jane", "lastName": "Appleseed"])
        #expect(user["email"] as? String == "jane@example.com")

        // The id_token: the nonce as sent, c_hash of the code, verifiable by siwa with the hashed nonce rule off.
        let idToken = try #require(fields["id_token"])
        let claims = try jwtClaims(of: idToken)
        #expect(claims["nonce"] as? String == "nonce-1")
        #expect(claims["c_hash"] as? String == Base64URL.encode(SHA256.hash(Array(fields["code"]!.utf8))[0..<16]))
        #expect(claims["aud"] as? String == EmulatorHarness.servicesID)
        let keys = try harness.keys()
        let verified = try AppleJWSVerifier(keys: keys).verifiedClaims(idToken)
        #expect(try verified.claims.string("iss") == "https://appleid.apple.com")

        // The same person again: no user member.
        let sub = try #require(claims["sub"] as? String)
        let userID = try #require(try harness.emulatorUserID(sub: sub))
        let second = try Self.consent(harness, user: userID)
        #expect(Set(second.formFields.keys) == ["code", "id_token", "state"])
        #expect(try jwtClaims(of: second.formFields["id_token"]!)["sub"] as? String == sub)
    }

    @Test("Cancel form-posts error=user_cancelled_authorize and the state, nothing else")
    func cancel() throws {
        let harness = try EmulatorHarness()
        let response = try Self.consent(harness, action: "cancel")
        #expect(response.formFields == ["error": "user_cancelled_authorize", "state": "state-1"])
    }

    @Test("Continue with an unknown test user is an error page, not a post to the client")
    func unknownUser() throws {
        let harness = try EmulatorHarness()
        let unknown = try Self.consent(harness, user: "user-0000000000000000")
        #expect(unknown.status == 400)
        #expect(unknown.text.contains("Unknown test user"))
        #expect(unknown.formFields.isEmpty)
    }

    @Test("Hide My Email gives a relay address, stable per user and client, and marks it private")
    func hideMyEmail() throws {
        let harness = try EmulatorHarness()
        let user = try harness.createUser()
        let web = try jwtClaims(of: try Self.consent(harness, user: user.id, emailChoice: "hide").formFields["id_token"]!)
        let relay = try #require(web["email"] as? String)
        #expect(relay.range(of: #"^[a-z0-9]{10}@privaterelay\.appleid\.com$"#, options: .regularExpression) != nil)
        #expect(web["is_private_email"] as? Bool == true)
        #expect(web["email_verified"] as? Bool == true)
        let again = try jwtClaims(of: try Self.consent(harness, user: user.id).formFields["id_token"]!)
        #expect(again["email"] as? String == relay, "the choice is kept for the client")

        let native = try jwtClaims(of: try harness.nativeSignIn(user: user.id, extra: #","hideEmail":true"#).token)
        let nativeRelay = try #require(native["email"] as? String)
        #expect(nativeRelay.hasSuffix("@privaterelay.appleid.com"))
        #expect(nativeRelay != relay, "another client gets another relay address")
        #expect(web["sub"] as? String == native["sub"] as? String, "one sub per user and team")
    }

    @Test("Query and fragment response modes redirect with the fields; an existing user can be picked")
    func redirectModes() throws {
        let harness = try EmulatorHarness()
        let query = try Self.consent(
            harness,
            request: [
                ("client_id", EmulatorHarness.servicesID), ("redirect_uri", EmulatorHarness.redirectURI), ("response_type", "code"),
                ("state", "s q"),
            ])
        #expect(query.status == 302)
        let location = try #require(query.header("Location"))
        #expect(location.hasPrefix(EmulatorHarness.redirectURI + "?code=c"))
        #expect(location.hasSuffix("&state=s%20q") || location.hasSuffix("&state=s+q"))
        let fragment = try Self.consent(
            harness,
            request: [
                ("client_id", EmulatorHarness.servicesID), ("redirect_uri", EmulatorHarness.redirectURI),
                ("response_type", "code id_token"),
                ("response_mode", "fragment"),
            ])
        #expect(fragment.status == 302)
        #expect(fragment.header("Location")?.contains("#code=") == true)
        #expect(fragment.header("Location")?.contains("&id_token=") == true)
    }
}

extension EmulatorHarness {
    /// The emulator's user id of `sub`, through the admin API.
    func emulatorUserID(sub: String) throws -> String? {
        // Users are few in a test; the consent page lists them.
        let page = request("GET", "/auth/authorize", query: AuthorizeTests.query(AuthorizeTests.webRequest()))
        let pattern = try NSRegularExpression(pattern: #"name="user_id" value="(user-[0-9a-f]+)""#)
        for match in pattern.matches(in: page.text, range: NSRange(page.text.startIndex..., in: page.text)) {
            let id = String(page.text[Range(match.range(at: 1), in: page.text)!])
            if try admin("GET", "/admin/users/\(id)")["sub"] as? String == sub { return id }
        }
        return nil
    }
}
