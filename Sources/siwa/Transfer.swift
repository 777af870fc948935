import AccountData
import ArgumentParser
import Foundation
import HTTPClient
import Identity
import Logging
import MariaDB
import SiwaConfig

struct Transfer: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move the app's users to another Apple developer team (team transfer), in two re-runnable steps.",
        discussion: """
            1. Before the transfer, with the sending team's configuration: `siwa transfer prepare --to-team <id>` mints a \
            transfer_sub for every identity. Run it again until nothing fails, and once more just before the transfer for users \
            who signed up since.
            2. Transfer the app in App Store Connect, then configure siwa with the receiving team's SIWA_APPLE_TEAM_ID, \
            SIWA_APPLE_KEY_ID and SIWA_APPLE_PRIVATE_KEY_FILE.
            3. `siwa transfer complete` resolves each transfer_sub to the user's new sub, on the same user. Run it again until \
            nothing fails. For 60 days, sign-ins whose token carries transfer_sub are matched too.
            Exit status: 0 when everything is done, 1 when some users were refused (run again), 75 when Apple could not be \
            reached or refused the server's credentials (nothing more was sent).
            """,
        subcommands: [Prepare.self, Complete.self, Status.self])

    /// The options every step takes.
    struct Options: ParsableArguments {
        @Option(help: "The client id whose credentials the calls use (default: the first bundle id, else the Services ID).")
        var clientId: String?

        @Option(help: "Milliseconds between two calls to Apple.")
        var paceMs: Int = 100
    }

    /// The configuration, its Apple settings and the logger, or exit 78 when Apple is not configured.
    static func open() throws -> (AppConfig, AppleSettings, Logger) {
        let config = try loadConfiguration()
        guard let apple = config.apple else {
            FileHandle.standardError.write(Data("invalid configuration:\n  - the SIWA_APPLE_* keys: required for transfer\n".utf8))
            throw ExitCode(78)
        }
        let logger = config.bootstrapLogging(label: "siwa-transfer")
        initializeMariaDBLibrary()
        initializeHTTPClientLibrary()
        return (config, apple, logger)
    }

    /// Runs one step, printing its progress every 50 identities and its report at the end.
    static func run(options: Options, _ step: (TeamTransfer, (TeamTransfer.Report) -> Void) throws -> TeamTransfer.Report) throws {
        let (config, apple, logger) = try open()
        guard let clientID = options.clientId ?? apple.bundleIDs.first ?? apple.servicesID, apple.clientIDs.contains(clientID) else {
            FileHandle.standardError.write(Data("--client-id: not one of the configured client ids\n".utf8))
            throw ExitCode(64)
        }
        let transfer = TeamTransfer(
            apple: AppleServices(settings: apple, logger: logger), database: config.database, logger: logger, clientID: clientID,
            pace: Double(max(0, options.paceMs)) / 1000, webhooks: config.webhooks)
        defer { transfer.close() }
        let report: TeamTransfer.Report
        do {
            report = try step(transfer) { sofar in
                let handled = sofar.done + sofar.failed.count + sofar.alreadyAttached
                if handled % 50 == 0 { print("... \(handled) handled: done=\(sofar.done) failed=\(sofar.failed.count)") }
            }
        } catch let stopped as TeamTransfer.Stopped {
            FileHandle.standardError.write(Data("stopped: \(stopped)\n".utf8))
            throw ExitCode(75)
        }
        print(report)
        if !report.failed.isEmpty { throw ExitCode(1) }
    }

    struct Prepare: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The sending team's step: mint a transfer_sub for every identity that has none for the target team.")

        @Option(help: "The receiving team's id (10 characters).")
        var toTeam: String

        @OptionGroup var options: Options

        func run() throws {
            guard toTeam.count == 10, toTeam.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) else {
                FileHandle.standardError.write(Data("--to-team: expected 10 characters A-Z and 0-9\n".utf8))
                throw ExitCode(64)
            }
            try Transfer.run(options: options) { transfer, progress in try transfer.prepare(to: toTeam, progress: progress) }
        }
    }

    struct Complete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The receiving team's step: resolve every stored transfer_sub to the user's new sub, on the same user.")

        @OptionGroup var options: Options

        func run() throws {
            try Transfer.run(options: options) { transfer, progress in try transfer.complete(progress: progress) }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "How far a transfer is: identities, minted, resolved, failing (no call to Apple).")

        @Option(help: "As the sending team: the receiving team's id. Without it, the transfers to the configured team.")
        var toTeam: String?

        func run() throws {
            let (config, apple, _) = try Transfer.open()
            // As the sending team: the transfer to --to-team; as the receiving team: those to it.
            let transfers =
                try toTeam.map { try TeamTransfer.status(sendingTeam: apple.teamID, receivingTeam: $0, database: config.database) }
                ?? TeamTransfer.status(sendingTeam: nil, receivingTeam: apple.teamID, database: config.database)
            if transfers.isEmpty { print("no transfer to \(apple.teamID) is recorded") }
            for (sending, receiving, progress) in transfers {
                print(
                    "\(sending) -> \(receiving): identities=\(progress.identities) minted=\(progress.minted) "
                        + "resolved=\(progress.resolved) failing=\(progress.failing)")
            }
        }
    }
}
