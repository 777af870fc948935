import ArgumentParser
import Foundation
import SiwaConfig

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
