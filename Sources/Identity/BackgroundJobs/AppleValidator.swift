import Accounts
package import AppleID
import HTTPClient
package import Logging
package import MariaDB

/// The daily check of Apple's refresh tokens, on lanes: each lane is a thread with its own
/// database connection and Apple client that claims due tokens a few at a time (oldest first, one
/// statement) and asks Apple about each, with the client id that minted it. Together the lanes keep
/// under `pace.rate` calls a second (one `CallPacer`), so that sign-ins' own calls to Apple keep
/// their share. A round starts with one lane; when a claim comes back full (a backlog), the other
/// `pace.lanes - 1` join it until each finds nothing due.
///
/// `invalid_grant` means consent was withdrawn for that client: the sessions opened with it end.
/// Apple unreachable changes nothing: the round ends, and the tokens claimed and not yet asked
/// about are checked once their claim's lease has passed.
package struct AppleValidator: Sendable {
    /// What a round did.
    package struct Outcome: Sendable, Equatable {
        package var validated = 0
        package var consentRevoked = 0
        package var failed = 0

        package init() {}
    }

    /// The threads of one round.
    package typealias Round = LaneRound<Outcome>

    let apple: AppleServices
    let dataKeys: DataKeys
    /// Where each helper lane opens its own connection.
    let database: Configuration
    /// Where events of the checks' changes are recorded.
    let outbox: WebhookOutbox
    let logger: Logger
    let clock: any WallClock
    package let pace: AppleValidationPace
    /// The rate ceiling every lane of this validator shares.
    package let pacer: CallPacer
    /// The daily schedule, and a claim's lease.
    private var schedule: RetryPolicy { .appleValidations }

    /// - Parameters:
    ///   - database: where each lane beyond the first opens its own connection (closed when it
    ///     finishes).
    ///   - webhooks: where the events of a refused token go (nil: no endpoint).
    ///   - pace: the rate ceiling and the lanes; by default the Apple settings' (`SIWA_APPLE_VALIDATION_*`).
    ///   - pacer: the rate ceiling's turns; by default the pace's rate on the system's uptime
    ///     (`clock` is the wall clock of the deadlines and events, which a test may stop).
    package init(
        apple: AppleServices, dataKeys: DataKeys, database: Configuration, webhooks: WebhookSettings?, logger: Logger,
        clock: any WallClock = SystemClock(), pace: AppleValidationPace? = nil, pacer: CallPacer? = nil
    ) {
        self.apple = apple
        self.dataKeys = dataKeys
        self.database = database
        self.outbox = webhooks?.outbox ?? WebhookOutbox()
        self.logger = logger
        self.clock = clock
        self.pace = pace ?? apple.settings.validationPace
        self.pacer = pacer ?? CallPacer(rate: self.pace.rate)
    }

    /// A lane's database connection and Apple client, used on one thread.
    package final class Lane {
        let connection: Connection
        let client: AppleClient
        private let ownsConnection: Bool

        /// A lane on a connection of its own, closed by `close()`.
        init(configuration: Configuration, apple: AppleServices) {
            connection = Connection(configuration: configuration)
            client = apple.makeClient()
            ownsConnection = true
        }

        /// A lane on the caller's connection and client (a pass's), which `close()` leaves open.
        package init(connection: Connection, client: AppleClient) {
            self.connection = connection
            self.client = client
            ownsConnection = false
        }

        /// Closes the connection if the lane opened it.
        package func close() { if ownsConnection { connection.close() } }
    }

    /// A lane on a connection of its own, for a thread of a running `siwa jobs`.
    package func makeLane() -> Lane { Lane(configuration: database, apple: apple) }

    /// A lane on the caller's connection (a pass's), with an Apple client of its own.
    package func makeLane(on connection: Connection) -> Lane { Lane(connection: connection, client: apple.makeClient()) }

    /// One round: `lane` (this thread's) claims and checks until nothing is due, Apple cannot be
    /// reached, `deadline` passes or `stopped()`; helper lanes join once a claim comes back full.
    /// Returns when they have all finished.
    package func run(_ round: Round, with lane: Lane, until deadline: Double, stopped: @escaping @Sendable () -> Bool) {
        round.run(
            helpers: pace.lanes - 1, threadName: "siwa-validation",
            first: { backlog in work(round, with: lane, until: deadline, stopped: stopped, backlog: backlog) },
            helper: { [self] _ in
                let helper = makeLane()
                defer { helper.close() }
                work(round, with: helper, until: deadline, stopped: stopped, backlog: {})
            })
    }

    /// Claims and checks until this lane finds nothing due, or the round ends for all its lanes;
    /// `backlog` is called after each full claim.
    private func work(_ round: Round, with lane: Lane, until deadline: Double, stopped: () -> Bool, backlog: () -> Void) {
        let batch = pace.claimBatch
        while !round.isOver {
            guard clock.now() < deadline, !stopped() else { return round.end(.interrupted) }
            do {
                let claimed = try retryingConflicts {
                    try AppleValidations.claimDue(
                        teamID: apple.settings.teamID, limit: batch, lease: schedule.hold(forAttempt: 1), park: pace.foreignPark,
                        on: lane.connection)
                }
                guard !claimed.isEmpty else { return }
                if claimed.count == batch { backlog() }
                for due in claimed {
                    // A token not reached keeps its claim until the lease passes.
                    guard clock.now() < deadline, !round.isOver, pacer.turn(stopped: stopped) else {
                        return round.end(.interrupted)
                    }
                    let (outcome, reached) = try check(due, with: lane)
                    round.record { $0.add(outcome) }
                    if !reached { return round.end(.unreachable) }
                }
            } catch {
                return round.fail(error)
            }
        }
    }

    /// Asks Apple about one claimed token and records the answer.
    /// - Returns: what it did, and whether Apple answered at all.
    private func check(_ due: DueValidation, with lane: Lane) throws -> (Outcome, reached: Bool) {
        var outcome = Outcome()
        guard let token = dataKeys.open(due.token) else {
            logger.error("validation: cannot decrypt the Apple token (data key missing?)", metadata: ["identity": "\(due.identityID)"])
            outcome.failed += 1
            return (outcome, true)
        }
        do {
            _ = try lane.client.refresh(token, clientID: due.token.clientID)
            try AppleValidations.markValid(due, nextCheckIn: schedule.delay(afterAttempt: 1), on: lane.connection)
            outcome.validated += 1
        } catch let error as AppleAPIError where error.code == .invalidGrant {
            let connection = lane.connection
            let ended = try connection.transaction {
                let ended = try AppleValidations.tokenRefused(due, on: connection)
                let now = clock.now()
                try outbox.record(
                    .appleConsentRevoked(source: "token_check", clientID: due.token.clientID), userID: due.userID, at: now, on: connection)
                try outbox.record(
                    .sessionsRevoked(ids: ended, reason: "apple_consent_revoked"), userID: due.userID, at: now, on: connection)
                return ended.count
            }
            logger.notice(
                "Apple refused a refresh token (consent withdrawn): the sessions of its client id ended",
                metadata: ["user": "\(due.userID)", "client": "\(due.token.clientID)", "sessions": "\(ended)"])
            outcome.consentRevoked += 1
        } catch let error as AppleAPIError {
            logger.warning(
                "validation at Apple failed; will retry",
                metadata: ["identity": "\(due.identityID)", "client": "\(due.token.clientID)", "error": "\(error)"])
            outcome.failed += 1
            if error.code == .unreachable {
                logger.warning("Apple could not be reached: the remaining validations wait for the next round")
                return (outcome, false)
            }
        }
        return (outcome, true)
    }
}

extension AppleValidator.Outcome {
    /// Adds what another lane did.
    mutating func add(_ other: Self) {
        validated += other.validated
        consentRevoked += other.consentRevoked
        failed += other.failed
    }
}
