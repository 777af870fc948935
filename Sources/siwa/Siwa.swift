import ArgumentParser
import Foundation
import Logging
import SiwaConfig

@main
struct Siwa: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "siwa",
        abstract: "A Sign in with Apple backend: a FastCGI application behind nginx.",
        version: siwaVersion,
        subcommands: [
            Serve.self, Migrate.self, ShowConfig.self, Keys.self, Jobs.self, Webhooks.self, Admin.self, Transfer.self, Setup.self,
            Doctor.self,
            Backup.self, Restore.self,
            VerifyToken.self,
            ClientSecret.self,
            BenchVerify.self,
            BenchSyncCache.self,
        ]
    )
}

/// Reads the configuration from the environment (run as root without one: from /etc/siwa/siwa.env,
/// with the service user's rights), or prints every problem and exits with EX_CONFIG.
func loadConfiguration() throws -> AppConfig {
    try OperatorEnvironment.adopt()
    do {
        return try AppConfig(environment: ProcessInfo.processInfo.environment)
    } catch let error as ConfigurationError {
        FileHandle.standardError.write(Data((error.description + "\n").utf8))
        throw ExitCode(78)
    }
}
