import Foundation
import SIWAKit
import SIWATestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The errors an app handles: every code of the HTTP contract as a typed member, readable messages.
@Suite struct ErrorTests {
    /// The `error` codes of docs/openapi.yaml's `Error` schema, in its order.
    static func documentedCodes() throws -> [String] {
        let path = #filePath.replacingOccurrences(of: "Tests/SIWAKitTests/ErrorTests.swift", with: "docs/openapi.yaml")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let schema = try #require(text.range(of: "\n    Error:\n"))
        let enumStart = try #require(text[schema.upperBound...].range(of: "enum:\n"))
        return text[enumStart.upperBound...].split(separator: "\n").prefix { $0.hasPrefix("            - ") }
            .map { String($0.dropFirst("            - ".count)) }
    }

    @Test("ServerError.Code has a member for every error code docs/openapi.yaml documents, and no other")
    func everyDocumentedCode() throws {
        let documented = try Self.documentedCodes()
        #expect(documented.count >= 30, "the document's codes")
        #expect(ServerError.Code.documented.map(\.rawValue) == documented)
        #expect(ServerError.Code.tokenReused == "token_reused" && ServerError.Code.invalidToken.rawValue == "invalid_token")
    }

    @Test("A code this version does not know is kept as it came")
    func unknownCode() {
        let error = ServerError(status: 418, code: ServerError.Code(rawValue: "teapot"), message: "I am a teapot")
        #expect(error.code.rawValue == "teapot" && !ServerError.Code.documented.contains(error.code))
        #expect(error.description == "HTTP 418 teapot: I am a teapot")
    }

    @Test("Errors read as sentences: a network failure names its cause, a server error its status, code and message")
    func readable() {
        let offline = SIWAError.network(URLError(.notConnectedToInternet))
        #expect(offline.description == "The server could not be reached: the device is offline (URLError -1009)")
        #expect(offline.localizedDescription == offline.description)
        let refused = SIWAError.server(ServerError(status: 401, code: .invalidToken, message: "The refresh token is not valid"))
        #expect("\(refused)" == "HTTP 401 invalid_token: The refresh token is not valid")
        #expect(SIWAError.network(URLError(.serverCertificateUntrusted)).description.contains("certificate is not trusted"))
    }
}

/// The typed call for the app's own API.
@Suite(.timeLimit(.minutes(1))) struct TypedCallTests {
    struct WhoAmI: Decodable, Equatable {
        var userId: String
    }

    @Test("send(_:decoding:) decodes a 2xx answer, throws the server's typed error for another, and invalidResponse for a wrong body")
    func typedCall() async throws {
        let harness = try ClientHarness { request in
            switch request.path {
            case "/auth/apple": return Answers.signIn(1)
            case "/example/whoami": return Answers.json(200, #"{"userId":"7"}"#)
            case "/example/admin": return Answers.error(403, "forbidden")
            default: return Answers.json(200, #"{"unexpected":true}"#)
            }
        }
        try await harness.signIn()
        let base = harness.server.baseURL
        let whoami = try await harness.client.send(URLRequest(url: URL(string: base + "/example/whoami")!), decoding: WhoAmI.self)
        #expect(whoami == WhoAmI(userId: "7"))
        #expect(harness.server.receivedRequests.last?.headers["authorization"] == "Bearer access-1")
        await #expect {
            _ = try await harness.client.send(URLRequest(url: URL(string: base + "/example/admin")!), decoding: WhoAmI.self)
        } throws: { error in
            guard case SIWAError.server(let server) = error else { return false }
            return server.status == 403 && server.code == .forbidden
        }
        await #expect {
            _ = try await harness.client.send(URLRequest(url: URL(string: base + "/example/other")!), decoding: WhoAmI.self)
        } throws: { error in
            if case SIWAError.invalidResponse = error { true } else { false }
        }
    }
}
