import AppleID
import JOSE
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
}
