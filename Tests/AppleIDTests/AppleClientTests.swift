import AppleID
import Foundation
import HTTPClient
import JOSE
import SIWAFixtures
import SIWATestSupport
import StrictJSON
import Testing
import WebForms

@Suite struct AppleClientTests {
    static let secretKey = Result { try P256PrivateKey() }

    func client(_ server: TestHTTPServer, timeout: Double = 5) throws -> AppleClient {
        let secrets = ClientSecretFactory(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: try Self.secretKey.get())
        return AppleClient(
            baseURL: server.baseURL, http: HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 2, timeout: timeout)),
            secrets: secrets)
    }

    static func fields(_ request: TestHTTPServer.Request) -> [String: String] {
        Dictionary(FormEncoding.fields(request.bodyText)!, uniquingKeysWith: { first, _ in first })
    }

    /// The captured Apple /auth/token response (FQAuth, 2022), body as Apple sent it.
    static func capturedTokenResponse() throws -> String {
        struct File: Decodable {
            let success: [Success]
            struct Success: Decodable { let body: String? }
        }
        return try Fixtures.decode(File.self, from: "apple/apple_token_endpoint_responses.json").success[0].body!
    }

    @Test("A native code is exchanged without redirect_uri, with a client secret for that client id")
    func nativeExchange() throws {
        let body = try Self.capturedTokenResponse()
        let server = try TestHTTPServer { _ in
            .init(status: 200, headers: [("Content-Type", "application/json;charset=ISO-8859-1")], body: body)
        }
        defer { server.stop() }
        let response = try client(server).exchangeCode("c0de.0.abc", clientID: "com.example.app", redirectURI: nil)
        #expect(response.tokenType == "Bearer")
        #expect(response.expiresIn == 3600)
        #expect(response.refreshToken?.hasPrefix("r0e4d7fa") == true)
        #expect(response.idToken != nil)
        let request = server.receivedRequests[0]
        #expect(request.method == "POST")
        #expect(request.path == "/auth/token")
        #expect(request.headers["content-type"] == "application/x-www-form-urlencoded")
        let fields = Self.fields(request)
        #expect(fields["grant_type"] == "authorization_code")
        #expect(fields["code"] == "c0de.0.abc")
        #expect(fields["client_id"] == "com.example.app")
        #expect(fields["redirect_uri"] == nil)
        let secret = try CompactJWS(fields["client_secret"]!)
        #expect(try secret.decodePayload().string("sub") == "com.example.app")
        #expect(try Self.secretKey.get().publicKey.isValidSignature(secret.signature, for: secret.signingInput))
    }

    @Test("A web code is exchanged with its redirect_uri, form-encoded")
    func webExchange() throws {
        let server = try TestHTTPServer { _ in
            .init(status: 200, body: #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"r","id_token":"i"}"#)
        }
        defer { server.stop() }
        _ = try client(server).exchangeCode("c", clientID: "com.example.web", redirectURI: "https://example.com/auth/callback?x=1&y=2")
        #expect(server.receivedRequests[0].bodyText.contains("redirect_uri=https%3A%2F%2Fexample.com%2Fauth%2Fcallback%3Fx%3D1%26y%3D2"))
        #expect(Self.fields(server.receivedRequests[0])["redirect_uri"] == "https://example.com/auth/callback?x=1&y=2")
    }

    @Test("A refresh-token grant sends the token and parses a response without a new refresh token")
    func refresh() throws {
        let server = try TestHTTPServer { _ in
            .init(status: 200, body: #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"id_token":"i"}"#)
        }
        defer { server.stop() }
        let response = try client(server).refresh("r.0.x", clientID: "com.example.app")
        #expect(response.refreshToken == nil)
        let fields = Self.fields(server.receivedRequests[0])
        #expect(fields["grant_type"] == "refresh_token")
        #expect(fields["refresh_token"] == "r.0.x")
    }

    @Test(
        "Each documented Apple error becomes its own code",
        arguments: [
            ("invalid_request", AppleAPIError.Code.invalidRequest), ("invalid_client", .invalidClient),
            ("invalid_grant", .invalidGrant), ("unauthorized_client", .unauthorizedClient),
            ("unsupported_grant_type", .unsupportedGrantType), ("invalid_scope", .invalidScope),
        ])
    func errors(error: String, code: AppleAPIError.Code) throws {
        let server = try TestHTTPServer { _ in .init(status: 400, body: #"{"error":"\#(error)","error_description":"x"}"#) }
        defer { server.stop() }
        #expect(throws: AppleAPIError(code)) { try client(server).exchangeCode("c", clientID: "a", redirectURI: nil) }
        #expect(throws: AppleAPIError(code)) { try client(server).revoke("t", kind: .refreshToken, clientID: "a") }
    }

    @Test("A 5xx, an HTML page or an unknown error is an unexpected response")
    func unexpected() throws {
        for response in [
            TestHTTPServer.Response(status: 503, body: "<html>busy</html>"), .init(status: 400, body: #"{"error":"other"}"#),
            .init(status: 200, body: "{}"),
        ] {
            let server = try TestHTTPServer { _ in response }
            defer { server.stop() }
            #expect(throws: AppleAPIError(.unexpectedResponse)) { try client(server).exchangeCode("c", clientID: "a", redirectURI: nil) }
        }
    }

    @Test("Revocation sends token_type_hint; 200 with no body is success")
    func revoke() throws {
        let server = try TestHTTPServer { _ in .init(status: 200) }
        defer { server.stop() }
        try client(server).revoke("r.0.x", kind: .refreshToken, clientID: "com.example.app")
        let fields = Self.fields(server.receivedRequests[0])
        #expect(server.receivedRequests[0].path == "/auth/revoke")
        #expect(fields["token"] == "r.0.x")
        #expect(fields["token_type_hint"] == "refresh_token")
        #expect(fields["client_id"] == "com.example.app")
    }

    @Test("Keys are fetched with their max-age")
    func keys() throws {
        let server = try TestHTTPServer { _ in .init(status: 200, headers: [("Cache-Control", "max-age=86400")], body: #"{"keys":[]}"#) }
        defer { server.stop() }
        let fetched = try AppleClient.fetchKeys(baseURL: server.baseURL + "/", http: HTTPClient())
        #expect(fetched.maxAge == 86_400)
        #expect(fetched.body == Array(#"{"keys":[]}"#.utf8))
        #expect(server.receivedRequests[0].path == "/auth/keys")
    }

    @Test("A slow or absent server gives unreachable within the timeouts")
    func unreachable() throws {
        let slow = try TestHTTPServer { _ in .init(status: 200, body: "{}", delay: 2) }
        defer { slow.stop() }
        let started = Date()
        #expect(throws: AppleAPIError(.unreachable)) { try client(slow, timeout: 0.5).exchangeCode("c", clientID: "a", redirectURI: nil) }
        #expect(Date().timeIntervalSince(started) < 1.9)
        let gone = try TestHTTPServer { _ in .init(status: 200) }
        gone.stop()
        #expect(throws: AppleAPIError(.unreachable)) { try client(gone).revoke("t", kind: .accessToken, clientID: "a") }
    }

    @Test("The HTTP client refuses oversized responses, other schemes, and untrusted TLS")
    func httpClientLimits() throws {
        let big = String(repeating: "x", count: 2 << 20)
        let server = try TestHTTPServer { _ in .init(status: 200, body: big) }
        defer { server.stop() }
        #expect(throws: HTTPClientError(.responseTooLarge, reason: "")) {
            try HTTPClient().send(HTTPRequest(method: "GET", url: server.baseURL))
        }
        #expect(throws: HTTPClientError(.invalidURL, reason: "")) {
            try HTTPClient().send(HTTPRequest(method: "GET", url: "file:///etc/passwd"))
        }
        #expect(throws: HTTPClientError(.invalidURL, reason: "")) {
            try HTTPClient().send(HTTPRequest(method: "GET", url: "ftp://127.0.0.1/"))
        }
    }
}
