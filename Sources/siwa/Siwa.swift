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

struct ShowConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Validate the configuration and print it, secrets redacted.")

    @Flag(help: "Print a commented example of every key instead (the package's /etc/siwa/siwa.env.example).")
    var example = false

    @Flag(help: "Print the table of every key in Markdown instead (the table of docs/CONFIGURATION.md).")
    var markdown = false

    func run() throws {
        if example {
            print(AppConfig.example, terminator: "")
            return
        }
        if markdown {
            print(AppConfig.markdownTable, terminator: "")
            return
        }
        let config = try loadConfiguration()
        print(config.redactedSummary(environment: ProcessInfo.processInfo.environment))
    }
}
