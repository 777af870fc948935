import Foundation
package import JOSE
import StrictJSON
import Synchronization

/// Makes the client secret Apple's token and revoke endpoints require: an ES256 JWT signed with
/// the team's Sign in with Apple key (the `.p8` file), made in process and cached per client id.
///
/// Header `{"alg":"ES256","kid":<key id>}`; claims `iss` team id, `iat`, `exp`, `aud`
/// `https://appleid.apple.com`, `sub` the client id (docs/APPLE-PROTOCOL.md §3). `iat` is set a
/// little in the past (`clockAllowance(for:)`), so `exp` comes that much earlier. A cached secret is
/// handed out only while at least as many seconds of it remain before its `exp`, and for at most
/// half its lifetime: every allowed lifetime, even the shortest, gets a secret Apple
/// still accepts when the call arrives. Secrets are never logged: the type has no description that
/// shows one.
package final class ClientSecretFactory: Sendable {
    /// Apple refuses secrets whose `exp` is more than 15,777,000 s (6 months) after now; we stay
    /// under 180 days.
    package static let maximumLifetime = 180 * 86_400
    /// The shortest lifetime allowed, in seconds.
    package static let minimumLifetime = 60

    /// Seconds allowed for clocks and transit on each side of a secret's validity: `iat` is set
    /// this far in the past, so that a host clock a little ahead of Apple's does not present a
    /// secret "issued in the future" (an intermittent `invalid_client`), and a secret is handed out
    /// only while this much of it remains before `exp`, for the time the call takes to reach Apple
    /// and a host clock a little behind Apple's. A minute, or a quarter of a lifetime under 4
    /// minutes (15 s at 60 s), so that a short-lived secret is not spent before it is made. `exp`
    /// comes as much earlier: never beyond Apple's limit.
    package static func clockAllowance(for lifetime: Int) -> Int { min(60, lifetime / 4) }

    package let teamID: String
    package let keyID: String
    private let key: P256PrivateKey
    private let lifetime: Int
    private let clock: @Sendable () -> Double
    /// Per client id: the secret, when it was made (the clock's time, not its back-dated `iat`),
    /// and its `exp`.
    private let cache = Mutex<[String: (secret: String, madeAt: Double, expiresAt: Int)]>([:])

    /// - Parameters:
    ///   - teamID: the 10-character Team ID (`iss`).
    ///   - keyID: the 10-character id of the Sign in with Apple key (`kid`).
    ///   - privateKey: the key from the `.p8` file.
    ///   - lifetime: seconds from `iat` to `exp`; 60 s ... 180 days.
    ///   - clock: the current Unix time.
    package init(
        teamID: String, keyID: String, privateKey: P256PrivateKey, lifetime: Int = 86_400,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        precondition(
            (Self.minimumLifetime...Self.maximumLifetime).contains(lifetime), "client secret lifetime must be 60 s ... 180 days")
        self.teamID = teamID
        self.keyID = keyID
        self.key = privateKey
        self.lifetime = lifetime
        self.clock = clock
    }

    /// A valid secret for `clientID` (a bundle id or the Services ID): the cached one while it is
    /// less than half its lifetime old and at least `clockAllowance(for:)` seconds remain before its
    /// `exp`, a new one otherwise (also when the clock went back).
    package func secret(for clientID: String) throws -> String {
        let now = clock()
        if let cached = cache.withLock({ $0[clientID] }), now >= cached.madeAt, now - cached.madeAt < Double(lifetime / 2),
            now + Double(Self.clockAllowance(for: lifetime)) < Double(cached.expiresAt)
        {
            return cached.secret
        }
        // `Int(now)` rounds down: `exp` is computed from the claim as written, not from `now`.
        let issuedAt = Int(now.rounded(.down)) - Self.clockAllowance(for: lifetime)
        let secret = try make(for: clientID, issuedAt: issuedAt)
        cache.withLock { $0[clientID] = (secret, now, issuedAt + lifetime) }
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
