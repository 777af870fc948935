import AppleID
import JOSE
import SIWAFixtures
import StrictJSON
import Testing

@Suite struct AppleJWSVerifierTests {
    @Test("The 6 real Apple server-to-server notifications verify with Apple's keys")
    func notificationsVerify() throws {
        let notifications = try AppleVectors.notifications()
        #expect(notifications.count == 6)
        let verifier = AppleJWSVerifier(keys: try AppleVectors.appleKeys())
        for notification in notifications {
            let (claims, _) = try verifier.verifiedClaims(notification.payload_jwt)
            #expect(try claims.string("iss") == "https://appleid.apple.com", "\(notification.id)")
            #expect(try claims.string("aud") == notification.aud, "\(notification.id)")
            #expect(claims.contains("events"), "\(notification.id)")
        }
    }

    @Test("A notification with one payload byte changed fails")
    func tamperedNotification() throws {
        let notification = try AppleVectors.notifications().first!
        var bytes = Array(notification.payload_jwt.utf8)
        let dot = bytes.firstIndex(of: UInt8(ascii: "."))!
        bytes[dot + 5] = bytes[dot + 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SignInError.self) {
            try AppleJWSVerifier(keys: try AppleVectors.appleKeys()).verifiedClaims(String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test("The 6 real notifications parse at their own clocks: type, sub, event_time in ms, the relay email and its string boolean")
    func realNotificationsParse() throws {
        let keys = try AppleVectors.appleKeys()
        for sample in try AppleVectors.notifications() {
            let verifier = NotificationVerifier(keys: keys, policy: IdentityTokenPolicy(clientIDs: [sample.aud]))
            let notification = try verifier.verify(sample.payload_jwt, now: sample.suggested_fixed_clock)
            #expect(notification.kind.name == sample.event_type, "\(sample.id)")
            #expect(notification.audience == sample.aud)
            #expect(!notification.subject.isEmpty && !notification.jti.isEmpty)
            #expect(notification.eventTime == sample.event_time_ms / 1000, "\(sample.id)")
            if notification.kind == .emailDisabled {
                #expect(notification.email?.hasSuffix("@privaterelay.appleid.com") == true)
                #expect(notification.isPrivateEmail == true, "the string \"true\" is read as true")
            }
            let otherAudience = NotificationVerifier(keys: keys, policy: IdentityTokenPolicy(clientIDs: ["com.example.other"]))
            #expect(throws: SignInError(.audienceMismatch)) {
                try otherAudience.verify(sample.payload_jwt, now: sample.suggested_fixed_clock)
            }
            #expect(throws: SignInError(.expired)) {
                try verifier.verify(sample.payload_jwt, now: sample.suggested_fixed_clock + 2 * 86400)
            }
        }
    }
}

/// The forms Apple's documentation and its samples disagree on, read the same way.
@Suite struct NotificationFormTests {
    func notification(_ claims: String) throws -> ServerNotification {
        let key = try RSAPrivateKey()
        let keys = StaticAppleKeys(
            try AppleKeySet.parse(
                Array(
                    #"{"keys":[{"kty":"RSA","kid":"K1","use":"sig","alg":"RS256","n":"\#(Base64URL.encode(key.publicKey.modulus))","e":"AQAB"}]}"#
                        .utf8)))
        let token = try CompactJWS.serialize(header: #"{"kid":"K1","alg":"RS256"}"#, claims: claims) { try key.signature(for: $0) }
        return try NotificationVerifier(keys: keys, policy: IdentityTokenPolicy(clientIDs: ["com.example.app"])).verify(
            token, now: 1_700_000_000)
    }

    let base = #""iss":"https://appleid.apple.com","aud":"com.example.app","iat":1700000000,"exp":1700086400,"jti":"j1""#

    @Test("events as a string or an object; account-delete or account-deleted; event_time in ms or s; is_private_email as bool or string")
    func bothForms() throws {
        let string = try notification(
            #"{\#(base),"events":"{\"type\":\"account-delete\",\"sub\":\"001.a.1\",\"event_time\":1700000000123}"}"#)
        let object = try notification(#"{\#(base),"events":{"type":"account-deleted","sub":"001.a.1","event_time":1700000000}}"#)
        #expect(string.kind == .accountDeleted && object.kind == .accountDeleted)
        #expect(string.eventTime == 1_700_000_000.123 && object.eventTime == 1_700_000_000)
        let email = try notification(
            #"{\#(base),"events":{"type":"email-enabled","sub":"s","email":"x@privaterelay.appleid.com","is_private_email":true}}"#)
        #expect(email.kind == .emailEnabled && email.isPrivateEmail == true && email.email == "x@privaterelay.appleid.com")
        #expect(try notification(#"{\#(base),"events":{"type":"new-kind","sub":"s"}}"#).kind == .other("new-kind"))
        #expect(throws: SignInError(.invalidClaim)) { try notification(#"{\#(base),"events":"not json"}"#) }
        #expect(throws: SignInError(.invalidClaim)) {
            try notification(#"{"iss":"https://appleid.apple.com","aud":"com.example.app","events":{"type":"t","sub":"s"}}"#)
        }
        #expect(throws: SignInError(.missingSubject)) { try notification(#"{\#(base),"events":{"type":"consent-revoked"}}"#) }
    }
}
