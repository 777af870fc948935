import AppleID
import Testing

/// Hide My Email addresses: as the token says, else by the relay domains.
@Suite struct PrivateRelayTests {
    @Test(
        "Without is_private_email, an address at one of Apple's relay domains (2026's private.icloud.com included) is a relay address",
        arguments: [
            ("abc@privaterelay.appleid.com", nil, true), ("abc@Private.iCloud.com", nil, true), ("jane@icloud.com", nil, false),
            ("abc@private.icloud.com.evil.example", nil, false), ("abc@private.icloud.com", false, false), ("jane@example.com", true, true),
            ("no-at-sign", nil, false),
        ] as [(String, Bool?, Bool)])
    func relay(email: String, tokenSays: Bool?, expected: Bool) {
        #expect(IdentityToken.isPrivateRelay(email, tokenSays: tokenSays, domains: IdentityToken.appleRelayDomains) == expected)
    }

    @Test("The list of domains is the one given (the configured one)")
    func configured() {
        #expect(IdentityToken.isPrivateRelay("x@relay.example", tokenSays: nil, domains: ["relay.example"]))
        #expect(!IdentityToken.isPrivateRelay("x@privaterelay.appleid.com", tokenSays: nil, domains: ["relay.example"]))
    }
}
