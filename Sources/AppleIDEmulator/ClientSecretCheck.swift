import JOSE
import StrictJSON

/// Checks a client secret the way Apple's token and revoke endpoints do (docs/APPLE-PROTOCOL.md §3): an ES256
/// JWT with the team key's `kid`, signed by that key, `iss` the team id, `aud`
/// `https://appleid.apple.com`, `sub` the client id, not expired, and `exp` at most 15,777,000 s
/// (six months) after `iat`. Any failure is `invalid_client`; the reason is for the emulator's log.
struct ClientSecretCheck {
    static let maximumLifetime: Int64 = 15_777_000

    let teamID: String
    let keyID: String
    let teamKey: P256PublicKey

    /// Nil when `secret` is acceptable for `clientID` at `now`, otherwise why not.
    func problem(with secret: String, clientID: String, now: Int64) -> String? {
        guard let jws = try? CompactJWS(secret) else { return "not a compact JWS" }
        guard (try? jws.header.string("alg")) == "ES256" else { return "alg is not ES256" }
        guard (try? jws.header.string("kid")) == keyID else { return "kid is not the team key's id" }
        guard teamKey.isValidSignature(jws.signature, for: jws.signingInput) else { return "bad signature" }
        guard let claims = try? jws.decodePayload() else { return "claims are not a JSON object" }
        guard (try? claims.string("iss")) == teamID else { return "iss is not the team id" }
        let audience = (try? claims.string("aud")) ?? (try? claims.stringArray("aud"))?.first
        guard audience == AppleFormats.issuer else { return "aud is not https://appleid.apple.com" }
        guard (try? claims.string("sub")) == clientID else { return "sub is not the client id" }
        guard let issuedAt = try? claims.integer("iat"), let expiresAt = try? claims.integer("exp") else {
            return "iat and exp must be integers"
        }
        guard expiresAt > now else { return "expired" }
        guard issuedAt <= now + 60 else { return "iat is in the future" }
        guard expiresAt - issuedAt <= Self.maximumLifetime else { return "exp is more than 6 months after iat" }
        return nil
    }
}
