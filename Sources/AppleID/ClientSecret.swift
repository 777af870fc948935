import Foundation
package import JOSE
import StrictJSON
import Synchronization

/// Makes the client secret Apple's token and revoke endpoints require: an ES256 JWT signed with
/// the team's Sign in with Apple key (the `.p8` file), made in process and cached per client id.
///
/// Header `{"alg":"ES256","kid":<key id>}`; claims `iss` team id, `iat`, `exp`, `aud`
/// `https://appleid.apple.com`, `sub` the client id (docs/APPLE-PROTOCOL.md §3). A secret is renewed once
/// half its lifetime has passed, long before Apple would refuse it. Secrets are never logged:
/// the type has no description that shows one.
package final class ClientSecretFactory: Sendable {
    /// Apple refuses secrets whose `exp` is more than 15,777,000 s (6 months) after now; we stay
    /// under 180 days.
    package static let maximumLifetime = 180 * 86_400
    /// Seconds `iat` is set in the past, so that a host clock a little ahead of Apple's does not
    /// present a secret "issued in the future" (an intermittent `invalid_client`). `exp` is then
    /// earlier by as much: never beyond Apple's limit.
    package static let backdating = 60

    package let teamID: String
    package let keyID: String
    private let key: P256PrivateKey
    private let lifetime: Int
    private let clock: @Sendable () -> Double
    private let cache = Mutex<[String: (secret: String, issuedAt: Double)]>([:])

    /// - Parameters:
    ///   - teamID: the 10-character Team ID (`iss`).
    ///   - keyID: the 10-character id of the Sign in with Apple key (`kid`).
    ///   - privateKey: the key from the `.p8` file.
    ///   - lifetime: seconds from `iat` to `exp`; 1...180 days.
    ///   - clock: the current Unix time.
    package init(
        teamID: String, keyID: String, privateKey: P256PrivateKey, lifetime: Int = 86_400,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        precondition((60...Self.maximumLifetime).contains(lifetime), "client secret lifetime must be 60 s ... 180 days")
        self.teamID = teamID
        self.keyID = keyID
        self.key = privateKey
        self.lifetime = lifetime
        self.clock = clock
    }

    /// A valid secret for `clientID` (a bundle id or the Services ID), from the cache when it is
    /// less than half its lifetime old.
    package func secret(for clientID: String) throws -> String {
        let now = clock()
        if let cached = cache.withLock({ $0[clientID] }), now - cached.issuedAt < Double(lifetime / 2), now >= cached.issuedAt {
            return cached.secret
        }
        let secret = try make(for: clientID, issuedAt: Int(now) - Self.backdating)
        cache.withLock { $0[clientID] = (secret, now) }
        return secret
    }

    /// A new secret, uncached.
    package func make(for clientID: String, issuedAt: Int) throws -> String {
        let header = JSONText.object([("alg", .string("ES256")), ("kid", .string(keyID))])
        let claims = JSONText.object([
            ("iss", .string(teamID)), ("iat", .integer(Int64(issuedAt))), ("exp", .integer(Int64(issuedAt + lifetime))),
            ("aud", .string("https://appleid.apple.com")), ("sub", .string(clientID)),
        ])
        return try CompactJWS.serialize(header: header, claims: claims, sign: key.signature(for:))
    }
}
