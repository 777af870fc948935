package import AccountData
package import Accounts
import AppleID
import Foundation
import JOSE
package import Logging
package import MariaDB
import StrictJSON

/// Moving the app's users to another Apple developer team (`siwa transfer`), in Apple's two
/// steps, each one safe to run again:
///
/// 1. `prepare(to:)`, with the sending team's configuration, before the transfer: mints a
///    `transfer_sub` for every identity of the team that has none for the target yet.
/// 2. `complete()`, with the receiving team's configuration, after the transfer: exchanges each
///    stored `transfer_sub` for the user's new `sub` and attaches it to the same user.
///
/// A refusal for one user is recorded and reported, and the run goes on; Apple unreachable, or
/// refusing our own credentials, stops the run (what was done stays done). Sign-ins with tokens
/// that carry `transfer_sub` are matched as well (`AppleAccounts.signIn`), so a user not yet
/// resolved lands on their account too.
package struct TeamTransfer {
    /// What a run did.
    package struct Report: Sendable, Equatable, CustomStringConvertible {
        /// Identities minted or resolved by this run.
        package var done = 0
        /// Resolved identities that were already the user's (a sign-in came first).
        package var alreadyAttached = 0
        /// Identities Apple refused, with why (the run went on without them).
        package var failed: [Failure] = []
        /// The counts of the whole transfer after the run.
        package var progress = AppleTransfers.Progress()

        package init() {}

        package var description: String {
            var text =
                "done=\(done) failed=\(failed.count) alreadyAttached=\(alreadyAttached) | identities=\(progress.identities) "
                + "minted=\(progress.minted) resolved=\(progress.resolved) failing=\(progress.failing)"
            for failure in failed { text += "\n  failed: \(failure)" }
            return text
        }
    }

    /// One identity the run could not handle.
    package struct Failure: Sendable, Equatable, CustomStringConvertible {
        package var identityID: UInt64
        package var userID: UInt64
        package var reason: String

        package var description: String { "identity \(identityID) of user \(userID): \(reason)" }
    }

    /// Why a run stopped before its end.
    package struct Stopped: Error, CustomStringConvertible {
        package let description: String
    }

    let apple: AppleServices
    let database: Connection
    let logger: Logger
    /// The client id whose credentials the calls use (the transferred app's).
    let clientID: String
    /// Seconds between two calls to Apple.
    let pace: Double
    /// Where lifecycle events of resolved identities are recorded.
    let outbox: WebhookOutbox
    let clock: any WallClock
    private let client: AppleClient

    /// A run on a connection of its own to `database` (`siwa transfer`); `close()` it after.
    package init(
        apple: AppleServices, database: Configuration, logger: Logger, clientID: String, pace: Double, webhooks: WebhookSettings?
    ) {
        self.init(
            apple: apple, database: Connection(configuration: database), logger: logger, clientID: clientID, pace: pace,
            outbox: webhooks?.outbox ?? WebhookOutbox())
    }

    /// Closes the run's database connection.
    package func close() { database.close() }

    /// How far the transfers from `sendingTeam` to `receivingTeam` are, or, without a sending
    /// team, every transfer recorded to `receivingTeam`; no call to Apple.
    package static func status(sendingTeam: String?, receivingTeam: String, database: Configuration) throws
        -> [(sending: String, receiving: String, progress: TransferProgress)]
    {
        let connection = Connection(configuration: database)
        defer { connection.close() }
        let sendingTeams = try sendingTeam.map { [$0] } ?? AppleTransfers.sendingTeams(of: receivingTeam, on: connection)
        return try sendingTeams.map { sending in
            (sending, receivingTeam, try AppleTransfers.progress(sendingTeam: sending, receivingTeam: receivingTeam, on: connection))
        }
    }

    package init(
        apple: AppleServices, database: Connection, logger: Logger, clientID: String, pace: Double = 0.1,
        outbox: WebhookOutbox = WebhookOutbox(), clock: any WallClock = SystemClock()
    ) {
        self.apple = apple
        self.database = database
        self.logger = logger
        self.clientID = clientID
        self.pace = pace
        self.outbox = outbox
        self.clock = clock
        self.client = apple.makeClient()
    }

    /// The sending team's step: a `transfer_sub` for `target` for every identity of the
    /// configured team that has none yet.
    /// - Parameter progress: called after each identity with the run's report so far.
    /// - Throws: `Stopped` when Apple cannot be reached or refuses our credentials.
    package func prepare(to target: String, progress: (Report) -> Void = { _ in }) throws -> Report {
        let team = apple.settings.teamID
        guard target != team else { throw Stopped(description: "the target team is the configured team \(team)") }
        func mint(_ identity: AppleTransfers.Identity, accessToken: String, report: inout Report) throws {
            let transferSub = try client.transferSub(of: identity.sub, to: target, clientID: clientID, accessToken: accessToken)
            try AppleTransfers.recordMinted(identity.identityID, target: target, transferSub: transferSub, on: database)
            report.done += 1
        }
        var report = try forEach(
            page: { try AppleTransfers.unminted(teamID: team, target: target, after: $0, limit: 100, on: database) }, target: target,
            progress: progress, step: mint)
        report.progress = try AppleTransfers.progress(sendingTeam: team, receivingTeam: target, on: database)
        return report
    }

    /// The receiving team's step: each `transfer_sub` minted for the configured team is exchanged
    /// for the user's `sub` in this team, which is attached to the same user.
    /// - Throws: `Stopped` when Apple cannot be reached or refuses our credentials.
    package func complete(progress: (Report) -> Void = { _ in }) throws -> Report {
        let team = apple.settings.teamID
        func resolve(_ identity: AppleTransfers.Identity, accessToken: String, report: inout Report) throws {
            guard let transferSub = identity.transferSub else { return }
            let user = try client.migratedUser(transferSub: transferSub, clientID: clientID, accessToken: accessToken)
            try attach(identity, as: user, team: team, into: &report)
        }
        var report = try forEach(
            page: { try AppleTransfers.unresolved(teamID: team, after: $0, limit: 100, on: database) }, target: team, progress: progress,
            step: resolve)
        report.progress = try AppleTransfers.progress(receivingTeam: team, on: database)
        return report
    }

    /// Runs `step` for every identity of the pages `page` gives after each id (in id order, so an
    /// identity Apple refused is not met again in the run), with the access token, one call at a
    /// time `pace` apart. Apple refusing an identity is recorded and the run goes on.
    private func forEach(
        page: (UInt64) throws -> [AppleTransfers.Identity], target: String, progress: (Report) -> Void,
        step: (AppleTransfers.Identity, String, inout Report) throws -> Void
    ) throws -> Report {
        var report = Report()
        var token = try AccessToken(client: client, clientID: clientID, clock: clock)
        var last: UInt64 = 0
        while true {
            let identities = try page(last)
            guard let end = identities.last else { break }
            last = end.identityID
            for identity in identities {
                do {
                    try token.call(clock: clock) { try step(identity, $0, &report) }
                } catch let error as AppleAPIError {
                    try refused(identity, target: target, error: error, into: &report)
                }
                progress(report)
                Thread.sleep(forTimeInterval: pace)
            }
        }
        return report
    }

    /// Attaches the new `sub` to the identity's user in one transaction, with its event.
    private func attach(_ identity: AppleTransfers.Identity, as user: AppleClient.MigratedUser, team: String, into report: inout Report)
        throws
    {
        let origin = AppleTransfers.Origin(identityID: identity.identityID, userID: identity.userID)
        let resolution = try retryingConflicts {
            try database.transaction {
                let resolution = try AppleTransfers.resolve(
                    origin, teamID: team, sub: user.sub, audience: clientID, email: user.email,
                    isPrivateEmail: user.isPrivateEmail ?? false,
                    on: database)
                if case .attached = resolution {
                    try outbox.record(
                        .appleIdLinked(by: "team_transfer", externalID: nil), userID: identity.userID, at: clock.now(), on: database)
                    try AuditLog.record(
                        "apple_id_linked", userID: identity.userID, detail: JSONText.object([("by", .string("team_transfer"))]),
                        on: database)
                }
                return resolution
            }
        }
        switch resolution {
        case .attached: report.done += 1
        case .alreadyAttached: report.alreadyAttached += 1
        case .conflict(let other):
            let reason = "the new sub already belongs to user \(other), who signed in before the transfer was resolved; nothing merged"
            try AppleTransfers.recordFailure(identity.identityID, target: team, error: reason, on: database)
            report.failed.append(Failure(identityID: identity.identityID, userID: identity.userID, reason: reason))
            logger.warning("team transfer: conflict", metadata: ["identity": "\(identity.identityID)", "otherUser": "\(other)"])
        }
    }

    /// Records Apple's refusal of one identity and goes on; stops the run when the refusal is
    /// about us rather than the user.
    private func refused(_ identity: AppleTransfers.Identity, target: String, error: AppleAPIError, into report: inout Report) throws {
        switch error.code {
        case .invalidRequest, .invalidGrant:
            try AppleTransfers.recordFailure(identity.identityID, target: target, error: error.description, on: database)
            report.failed.append(Failure(identityID: identity.identityID, userID: identity.userID, reason: error.description))
            logger.warning(
                "team transfer: Apple refused one identity; it is left for the next run",
                metadata: ["identity": "\(identity.identityID)", "error": "\(error)"])
        default:
            throw Stopped(description: "Apple: \(error); nothing more was sent (run again to continue)")
        }
    }

    /// The `client_credentials` access token, taken again a minute before it expires or when Apple
    /// refuses it.
    struct AccessToken {
        private let client: AppleClient
        private let clientID: String
        private var value: String
        private var expiresAt: Double

        init(client: AppleClient, clientID: String, clock: any WallClock) throws {
            self.client = client
            self.clientID = clientID
            (value, expiresAt) = try Self.fetch(client, clientID, clock: clock)
        }

        private static func fetch(_ client: AppleClient, _ clientID: String, clock: any WallClock) throws -> (String, Double) {
            do {
                let answer = try client.migrationAccessToken(clientID: clientID)
                return (answer.accessToken, clock.now() + Double(answer.expiresIn))
            } catch let error as AppleAPIError {
                throw Stopped(description: "Apple refused the client_credentials grant for \(clientID): \(error)")
            }
        }

        /// Runs `body` with the token; once more with a new token when Apple refuses the client.
        mutating func call<T>(clock: any WallClock, _ body: (String) throws -> T) throws -> T {
            if clock.now() > expiresAt - 60 { (value, expiresAt) = try Self.fetch(client, clientID, clock: clock) }
            do {
                return try body(value)
            } catch let error as AppleAPIError where error.code == .invalidClient {
                (value, expiresAt) = try Self.fetch(client, clientID, clock: clock)
                return try body(value)
            }
        }
    }
}
