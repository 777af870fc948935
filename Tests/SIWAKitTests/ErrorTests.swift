import Foundation
import SIWAKit
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
