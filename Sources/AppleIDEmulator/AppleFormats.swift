import JOSE
import StrictJSON

/// The shapes of Apple's identifiers and tokens (docs/APPLE-PROTOCOL.md, Tests/Fixtures/vectors/apple).
enum AppleFormats {
    static let issuer = "https://appleid.apple.com"
    static let relayDomain = "privaterelay.appleid.com"

    /// Apple's user identifier, `NNNNNN.<32 hex>.NNNN`, derived from the team and the user so it is
    /// stable per user and team and differs between teams.
    static func sub(teamID: String, userID: String) -> String {
        let hash = SHA256.hash(Array("sub|\(teamID)|\(userID)".utf8))
        let head = (Int(hash[0]) << 16 | Int(hash[1]) << 8 | Int(hash[2])) % 1_000_000
        let tail = (Int(hash[19]) << 8 | Int(hash[20])) % 10_000
        return padded(head, 6) + "." + hexString(Array(hash[3..<19])) + "." + padded(tail, 4)
    }

    /// A user's `transfer_sub` for a transfer from team `from` to team `to`: stable, shaped like
    /// a `sub`, never equal to one.
    static func transferSub(userID: String, from: String, to: String) -> String {
        sub(teamID: "transfer|\(from)|\(to)", userID: userID)
    }

    /// The relay address that replaces `relay` when the app moves to `team`.
    static func relayAddress(derivedFrom relay: String, team: String) -> String {
        String(hexString(SHA256.hash(Array("relay|\(team)|\(relay)".utf8))).prefix(10)) + "@" + relayDomain
    }

    /// A relay address such as `zdfu7jtuus@privaterelay.appleid.com`.
    static func relayAddress() throws -> String {
        try randomLetters(10, alphabet: "abcdefghijklmnopqrstuvwxyz0123456789") + "@" + relayDomain
    }

    /// A key id shaped like Apple's real ones (`YuyXoY`, `W6WcOKB`): seven letters and digits.
    static func keyID() throws -> String {
        try randomLetters(7, alphabet: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    }

    /// A test user id.
    static func userID() throws -> String { "user-" + hexString(try SecureRandom.bytes(count: 8)) }

    /// An opaque token like Apple's: `<kind><32 hex>.0.<5 letters>.<22 base64url>` with kind `c`
    /// (authorization code), `a` (access token) or `r` (refresh token).
    static func opaqueToken(kind: Character) throws -> String {
        let random = try SecureRandom.bytes(count: 32)
        return String(kind) + hexString(Array(random[0..<16])) + ".0."
            + (try randomLetters(5, alphabet: "abcdefghijklmnopqrstuvwxyz")) + "." + Base64URL.encode(random[16..<32])
    }

    /// A notification id like Apple's `jti`: 16 random bytes in base64url.
    static func notificationID() throws -> String { Base64URL.encode(try SecureRandom.bytes(count: 16)) }

    /// `c_hash` / `at_hash` (OpenID Connect Core §3.3.2.11): the left half of the SHA-256 of the
    /// value, base64url.
    static func halfHash(_ value: String) -> String {
        Base64URL.encode(SHA256.hash(Array(value.utf8))[0..<16])
    }

    private static func padded(_ number: Int, _ width: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func randomLetters(_ count: Int, alphabet: String) throws -> String {
        let letters = Array(alphabet)
        // Rejection sampling keeps every letter equally likely.
        let limit = 256 - 256 % letters.count
        var out = ""
        while out.count < count {
            for byte in try SecureRandom.bytes(count: count * 2) where Int(byte) < limit && out.count < count {
                out.append(letters[Int(byte) % letters.count])
            }
        }
        return out
    }
}

/// The claims of an identity token, in the order Apple writes them.
struct IdentityClaims {
    var audience: String
    var subject: String
    var issuedAt: Int64
    var lifetime: Int64
    var nonce: String?
    var codeHash: String?
    var accessTokenHash: String?
    var email: String?
    var emailVerified: Bool
    var isPrivateEmail: Bool
    var authTime: Int64
    var realUserStatus: Int?
    var transferSub: String?

    var json: String {
        JSONText.object([
            ("iss", .string(AppleFormats.issuer)),
            ("aud", .string(audience)),
            ("exp", .integer(issuedAt + lifetime)),
            ("iat", .integer(issuedAt)),
            ("sub", .string(subject)),
            ("nonce", nonce.map { .string($0) }),
            ("c_hash", codeHash.map { .string($0) }),
            ("at_hash", accessTokenHash.map { .string($0) }),
            ("email", email.map { .string($0) }),
            ("email_verified", email.map { _ in .bool(emailVerified) }),
            ("is_private_email", email != nil && isPrivateEmail ? .bool(true) : nil),
            ("auth_time", .integer(authTime)),
            ("nonce_supported", .bool(true)),
            ("real_user_status", realUserStatus.map { .integer(Int64($0)) }),
            ("transfer_sub", transferSub.map { .string($0) }),
        ])
    }
}

extension SigningKey {
    /// Signs `claims` as an RS256 JWS with this key's `kid`, header as Apple writes it.
    func sign(claims: String) throws -> String {
        let header = JSONText.object([("kid", .string(keyID)), ("alg", .string("RS256"))])
        return try CompactJWS.serialize(header: header, claims: claims, sign: privateKey.signature(for:))
    }

    /// The public key as a member of Apple's key set (`kty`, `kid`, `use`, `alg`, `n`, `e`).
    var jwk: String {
        let publicKey = privateKey.publicKey
        return JSONText.object([
            ("kty", .string("RSA")), ("kid", .string(keyID)), ("use", .string("sig")), ("alg", .string("RS256")),
            ("n", .string(Base64URL.encode(publicKey.modulus))), ("e", .string(Base64URL.encode(publicKey.exponent))),
        ])
    }
}
