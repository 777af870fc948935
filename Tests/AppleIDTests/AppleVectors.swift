import AppleID
import Foundation
import JOSE
import SIWAFixtures

/// The real Apple data in Tests/Fixtures/vectors/apple, decoded for the tests.
enum AppleVectors {
    typealias RealToken = AppleFixtures.RealToken
    typealias Notification = AppleFixtures.Notification

    struct NegativeCase: Decodable {
        let id: String
        let attack_class: String
        let token: String
    }

    struct Negatives: Decodable {
        let real_world: [NegativeCase]
        let derived: [NegativeCase]
        let base_token_for_derived: BaseToken
        let attacker_private_jwk: [String: String]
        struct BaseToken: Decodable {
            let id: String
            let token: String
        }
        var all: [NegativeCase] { real_world + derived }
    }

    struct JWKSet: Decodable {
        let keys: [[String: String]]
    }

    static func realTokens() throws -> [RealToken] { try AppleFixtures.tokens() }

    static func negatives() throws -> Negatives {
        try Fixtures.decode(Negatives.self, from: "apple/apple_negative_cases.json")
    }

    static func notifications() throws -> [Notification] { try AppleFixtures.notifications() }

    /// The 18 Apple signing keys found with the tokens.
    static func appleKeys() throws -> StaticAppleKeys {
        StaticAppleKeys(try AppleKeySet.parse(AppleFixtures.keySet()))
    }

    static func token(_ id: String) throws -> RealToken { try AppleFixtures.token(id) }
}

/// Signs test tokens with our own key, to reach the checks that come after the signature.
struct TestSigner {
    static let keyID = "test-key-1"
    let key: RSAPrivateKey
    let keys: StaticAppleKeys

    init() throws {
        key = try TestSigner.sharedKey()
        keys = StaticAppleKeys([AppleKey(keyID: Self.keyID, algorithm: "RS256", publicKey: key.publicKey)])
    }

    /// One key for the whole test run: generating RSA keys is slow.
    private static let cached = Result { try RSAPrivateKey(bits: 2048) }
    static func sharedKey() throws -> RSAPrivateKey { try cached.get() }

    /// A compact RS256 JWS of `claims` (JSON text) with `header` (JSON text).
    func sign(header: String = #"{"alg":"RS256","kid":"test-key-1"}"#, claims: String) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(try key.signature(for: Array(input.utf8)))
    }

    /// Claims shaped like Apple's for a native sign-in at `now`, with members replaced or added.
    static func claims(now: Double = 1_700_000_000, _ overrides: [String: String] = [:], removing: Set<String> = []) -> String {
        var members: [(String, String)] = [
            ("iss", #""https://appleid.apple.com""#), ("aud", #""com.example.app""#),
            ("exp", "\(Int(now) + 600)"), ("iat", "\(Int(now))"),
            ("sub", #""001234.abcdef.0001""#), ("email", #""x@privaterelay.appleid.com""#),
            ("email_verified", "true"), ("is_private_email", #""true""#), ("nonce_supported", "true"),
            ("nonce", "\"\(SHA256.hex(Array("raw-nonce".utf8)))\""), ("real_user_status", "2"),
        ]
        members = members.filter { !removing.contains($0.0) && overrides[$0.0] == nil }
        members += overrides.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        return "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}
