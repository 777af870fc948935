import Foundation
import JOSE
import StrictJSON

/// One of Apple's server-to-server notifications (`POST` to the app's endpoint, body
/// `{"payload": "<JWS>"}`), verified.
package struct ServerNotification: Sendable, Equatable {
    package enum Kind: Sendable, Equatable {
        case consentRevoked
        /// Apple's samples and every library say `account-delete`; one version of Apple's page says
        /// `account-deleted`. Both mean this.
        case accountDeleted
        case emailDisabled
        case emailEnabled
        /// A type this server does not know; recorded and acknowledged.
        case other(String)

        init(_ type: String) {
            switch type {
            case "consent-revoked": self = .consentRevoked
            case "account-delete", "account-deleted": self = .accountDeleted
            case "email-disabled": self = .emailDisabled
            case "email-enabled": self = .emailEnabled
            default: self = .other(type)
            }
        }

        /// The type as stored and logged (Apple's spelling; `account-delete` for both spellings).
        package var name: String {
            switch self {
            case .consentRevoked: "consent-revoked"
            case .accountDeleted: "account-delete"
            case .emailDisabled: "email-disabled"
            case .emailEnabled: "email-enabled"
            case .other(let type): type
            }
        }
    }

    /// The JWT id: each notification is handled once.
    package var jti: String
    /// The client id it is for (`aud`).
    package var audience: String
    package var kind: Kind
    /// The user, as Apple's `sub` for our team.
    package var subject: String
    /// The relay address of `email-disabled` / `email-enabled`.
    package var email: String?
    package var isPrivateEmail: Bool?
    /// When it happened, in Unix seconds (Apple sends milliseconds; seconds are accepted too).
    package var eventTime: Double?
}

/// Verifies notifications exactly like identity tokens (docs/SECURITY.md rule 7): Apple's key set, RS256,
/// `iss` pinned, `aud` one of the configured client ids, `exp` and `iat` when present, then the
/// `events` claim in either form Apple sends (a JSON string, or an object).
package struct NotificationVerifier: Sendable {
    package let policy: IdentityTokenPolicy
    let signatures: AppleJWSVerifier

    package init(keys: any AppleKeySource, policy: IdentityTokenPolicy) {
        self.policy = policy
        self.signatures = AppleJWSVerifier(keys: keys)
    }

    /// The longest `jti` and `sub` accepted.
    static let maximumIdentifierLength = 255

    /// - Parameter now: Unix seconds (injected, so tests use each sample's own clock).
    /// - Throws: `SignInError` for the first rule the payload breaks.
    package func verify(_ payload: some StringProtocol, now: Double) throws -> ServerNotification {
        var runner = StepRunner(recording: false)
        let (claims, _) = try signatures.verifiedClaims(payload, runner: &runner)
        let context = IdentityTokenVerifier.ClaimContext(
            claims: IdentityClaims(claims), policy: policy, now: now, nonce: nil, code: nil, recording: false)
        for check in IdentityTokenVerifier.claimChecks where check.name == "iss" || check.name == "aud" {
            _ = try check.body(context)
        }
        if let exp = try claims.numericDate("exp"), now >= exp + Double(policy.leeway) {
            throw SignInError(.expired, "the notification expired")
        }
        if let iat = try claims.numericDate("iat"), iat > now + Double(policy.leeway) {
            throw SignInError(.issuedInFuture, "the notification is issued in the future")
        }
        guard let jti = try claims.stringClaim("jti"), !jti.isEmpty, jti.utf8.count <= Self.maximumIdentifierLength else {
            throw SignInError(.invalidClaim, "jti is missing, empty or too long")
        }
        let events = try Self.events(claims)
        guard let type = try events.stringClaim("type"), !type.isEmpty, type.utf8.count <= 64 else {
            throw SignInError(.invalidClaim, "events.type is missing")
        }
        guard let subject = try events.stringClaim("sub"), !subject.isEmpty, subject.utf8.count <= Self.maximumIdentifierLength else {
            throw SignInError(.missingSubject, "events.sub is missing or empty")
        }
        let email = try events.stringClaim("email")
        guard (email?.utf8.count ?? 0) <= 320 else { throw SignInError(.invalidClaim, "events.email is too long") }
        return ServerNotification(
            jti: jti, audience: IdentityClaims.audience(of: claims) ?? "", kind: ServerNotification.Kind(type),
            subject: subject, email: email, isPrivateEmail: try events.appleBoolean("is_private_email"),
            eventTime: try Self.eventTime(events))
    }

    /// `events` as a JSON string holding an object (what Apple sends) or as an object (what its
    /// documentation shows).
    static func events(_ claims: JSONObject) throws -> JSONObject {
        switch claims.kind(of: "events") {
        case .object:
            if let object = try? claims.object("events") { return object }
        case .string:
            if let text = try? claims.string("events"), let object = try? JSONObject(parsing: text) { return object }
        default: break
        }
        throw SignInError(.invalidClaim, "events must be a JSON object or a string holding one")
    }

    /// `event_time` in milliseconds (Apple's samples) or seconds (its documentation), as seconds.
    /// Values above 10^11 are milliseconds: as seconds they would be after the year 5000.
    static func eventTime(_ events: JSONObject) throws -> Double? {
        guard let value = try events.numericDate("event_time") else { return nil }
        return value > 100_000_000_000 ? value / 1000 : value
    }
}
