import Identity
import JOSE
import Testing

/// Hide My Email addresses: as the token says, else by the configured relay domains.
@Suite struct RelayAddressTests {
    static func settings(relayDomains: [String] = AppleSettings.defaultRelayDomains) throws -> AppleSettings {
        AppleSettings(
            teamID: "TEAMID1234", keyID: "KEYID12345", privateKey: try P256PrivateKey(), bundleIDs: ["com.example.app"], servicesID: nil,
            relayDomains: relayDomains)
    }

    @Test(
        "Without is_private_email, an address at a relay domain (2026's private.icloud.com included) is a relay address",
        arguments: [
            ("abc@privaterelay.appleid.com", nil, true), ("abc@Private.iCloud.com", nil, true), ("jane@icloud.com", nil, false),
            ("abc@private.icloud.com.evil.example", nil, false), ("abc@private.icloud.com", false, false), ("jane@example.com", true, true),
        ] as [(String, Bool?, Bool)])
    func relay(email: String, tokenSays: Bool?, expected: Bool) throws {
        #expect(try Self.settings().isRelayAddress(email, tokenSays: tokenSays) == expected)
    }

    @Test("The list of domains is the configured one")
    func configured() throws {
        let settings = try Self.settings(relayDomains: ["relay.example"])
        #expect(settings.isRelayAddress("x@relay.example", tokenSays: nil))
        #expect(!settings.isRelayAddress("x@privaterelay.appleid.com", tokenSays: nil))
    }
}
