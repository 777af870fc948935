import Accounts
import ArgumentParser
import Foundation
import Identity
import MariaDB
import Server

struct Users: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Act on users as an operator.", subcommands: [Delete.self])

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a user and everything theirs, as DELETE /auth/account does.",
            discussion: """
                Every session ends at once; Apple's refresh tokens are queued for revocation at Apple (sent by \
                `siwa jobs`); the app's backend gets `user.deleted` with source `operator`.
                """)

        @Argument(help: "The user id.")
        var user: UInt64

        func run() throws {
            let config = try loadConfiguration()
            let logger = makeLogger(config, label: "siwa-users")
            initializeMariaDBLibrary()
            let core = IdentityCore(
                apple: nil, sessions: nil, database: config.database, webhooks: config.webhooks?.outbox ?? WebhookOutbox())
            let operations = Operations(core: core, database: config.database, logger: logger)
            defer {
                operations.close()
                core.syncCommits.stop()
            }
            guard try operations.deleteUser(user, source: "operator", remoteAddress: nil) else {
                FileHandle.standardError.write(Data("no user \(user)\n".utf8))
                throw ExitCode(1)
            }
            print("deleted user \(user)")
        }
    }
}
