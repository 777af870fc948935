import AppleID
import ArgumentParser
import Foundation
import Identity
import SiwaConfig

struct ClientSecret: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client-secret",
        abstract: "Print a fresh client secret (ES256 JWT) made from the configured .p8 key.",
        discussion: "Check it independently with scripts/verify-client-secret SECRET KEY.p8.")

    @Option(help: "The client id (sub); defaults to the first bundle id, else the Services ID.")
    var clientID: String?

    @Option(help: "The iat claim as a Unix time instead of now (to test how an expired secret is refused).")
    var issuedAt: Int?

    func run() throws {
        let config = try loadConfiguration()
        guard let apple = config.apple else {
            FileHandle.standardError.write(
                Data("SIWA_APPLE_TEAM_ID, SIWA_APPLE_KEY_ID and SIWA_APPLE_PRIVATE_KEY_FILE are required\n".utf8))
            throw ExitCode(78)
        }
        guard let client = clientID ?? apple.bundleIDs.first ?? apple.servicesID else { throw ExitCode(78) }
        let factory = ClientSecretFactory(
            teamID: apple.teamID, keyID: apple.keyID, privateKey: apple.privateKey, lifetime: apple.clientSecretLifetime)
        print(try factory.make(for: client, issuedAt: issuedAt ?? Int(Date().timeIntervalSince1970)))
    }
}
