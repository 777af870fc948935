import AppleID
import ArgumentParser
import Foundation
import HTTPClient
import Identity
import JOSE
import SiwaConfig

struct VerifyToken: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-token",
        abstract: "Verify an Apple identity token and print every check.",
        discussion: """
            Prints the decoded header and claims, then one line per check. Exits 0 only when every \
            check passes, 1 otherwise. The key set comes from --jwks (a file or URL), else from \
            SIWA_APPLE_BASE_URL/auth/keys, else from https://appleid.apple.com/auth/keys. Audiences \
            default to SIWA_APPLE_BUNDLE_IDS and SIWA_APPLE_SERVICES_ID.
            """)

    @Argument(help: "The token, or - to read it from standard input (surrounding whitespace is trimmed).")
    var token: String

    @Option(help: "A JWK Set: a file path or an http(s) URL.")
    var jwks: String?

    @Option(help: "An accepted client id (repeatable).")
    var audience: [String] = []

    @Option(help: "The raw nonce the client sent; the token's nonce must be its SHA-256.")
    var nonce: String?

    @Option(help: "The authorization code sent with the token, checked against c_hash.")
    var code: String?

    @Option(help: "Verify as of this Unix time instead of now.")
    var at: Double?

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        var text = token
        if token == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile().prefix(1 << 20), as: UTF8.self)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        printSegments(text)

        let keys: StaticAppleKeys
        do {
            keys = StaticAppleKeys(try AppleKeySet.parse(loadKeySet(environment)))
        } catch {
            print("FAIL  keys         cannot load the key set: \(error)")
            throw ExitCode(1)
        }
        var audiences = Set(audience)
        if audiences.isEmpty {
            audiences.formUnion(
                (environment["SIWA_APPLE_BUNDLE_IDS"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            if let services = environment["SIWA_APPLE_SERVICES_ID"] { audiences.insert(services) }
            audiences.remove("")
        }
        if audiences.isEmpty { print("note: no --audience given and none configured: the aud check fails") }
        let verifier = IdentityTokenVerifier(keys: keys, policy: IdentityTokenPolicy(clientIDs: audiences, requireNonce: false))
        let report = verifier.report(text, nonce: nonce, authorizationCode: code, now: at ?? Date().timeIntervalSince1970)
        for step in report.steps {
            let (mark, detail): (String, String)
            switch step.outcome {
            case .passed(let text): (mark, detail) = ("pass", text)
            case .failed(let error): (mark, detail) = ("FAIL", error.description)
            }
            print("\(mark)  \(step.name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(detail)")
        }
        print(report.passed ? "result: valid" : "result: INVALID")
        if !report.passed { throw ExitCode(1) }
    }

    /// The key-set document from --jwks, the configured base URL, or Apple.
    private func loadKeySet(_ environment: [String: String]) throws -> [UInt8] {
        let source = jwks ?? ((environment["SIWA_APPLE_BASE_URL"] ?? "https://appleid.apple.com") + "/auth/keys")
        guard source.hasPrefix("https://") || source.hasPrefix("http://") else {
            return Array(try Data(contentsOf: URL(fileURLWithPath: source)))
        }
        initializeHTTPClientLibrary()
        let http = HTTPClient(configuration: HTTPClientConfiguration(caFile: environment["SIWA_APPLE_CA_FILE"]))
        let response = try http.send(HTTPRequest(method: "GET", url: source))
        guard response.status == 200 else { throw AppleAPIError(.unexpectedResponse, status: response.status) }
        return response.body
    }

    /// Prints the header and claims as JSON, whatever the token holds (nothing here is trusted).
    private func printSegments(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        for (index, title) in ["header", "claims"].enumerated() {
            guard index < parts.count, let bytes = Base64URL.decode(parts[index]) else {
                print("\(title): (not base64url)")
                continue
            }
            if let object = try? JSONSerialization.jsonObject(with: Data(bytes)),
                let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
            {
                print("\(title): \(String(decoding: pretty, as: UTF8.self))")
            } else {
                print("\(title): (not JSON) \(String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription)")
            }
        }
    }
}
