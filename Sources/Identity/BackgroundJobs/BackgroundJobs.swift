import Accounts
import AppleID
package import Logging
package import MariaDB
package import SyncRules

/// The work `siwa jobs` does outside requests: send queued revocations to Apple, re-validate
/// Apple refresh tokens once a day, deliver the lifecycle webhooks, purge the rows of the tables
/// that grow with use past their retention (`RetentionPolicy`), and the tombstones of deleted
/// records of declared collections past their `tombstoneDays`. Each pass is bounded: each kind
/// of call to Apple works within its own half of the pass's time (revocations at most `batch`
/// rows), and stops for the pass once Apple could not be reached, so a hanging Apple holds neither
/// the pass nor the other kind. The webhooks are delivered by a running `siwa jobs`'s
/// `WebhookDeliveryLoop`, and Apple's tokens checked by its `AppleValidationLoop`, as soon as they
/// are due; a pass of `siwa jobs --once` (and of the tests) delivers and checks everything due
/// within its halves of the pass's time, with the same lanes and threads. Every pass sheds the
/// checks overdue by more than a day (`shedOverdueValidations`).
package struct BackgroundJobs {
    /// What one pass did.
    package struct Summary: Sendable, Equatable, CustomStringConvertible {
        package var revoked = 0
        package var revocationsFailed = 0
        package var validated = 0
        package var consentRevoked = 0
        package var validationsFailed = 0
        /// Checks overdue by more than a day moved to their next slot without a call.
        package var validationsShed = 0
        package var webhooks = WebhookSender.Outcome()
        package var purged: UInt64 = 0
        package var guestsPurged = 0
        package var tombstonesPurged: UInt64 = 0

        package init() {}

        /// Whether the pass found anything to do.
        package var isEmpty: Bool { self == Summary() }

        package var description: String {
            "revoked=\(revoked) revocationsFailed=\(revocationsFailed) validated=\(validated) "
                + "consentRevoked=\(consentRevoked) validationsFailed=\(validationsFailed) webhooksDelivered=\(webhooks.delivered) "
                + "webhooksFailed=\(webhooks.failed) webhooksGivenUp=\(webhooks.givenUp) purged=\(purged) guestsPurged=\(guestsPurged) "
                + "tombstonesPurged=\(tombstonesPurged) validationsShed=\(validationsShed)"
        }
    }

    let apple: AppleServices
    /// How long the rows of the tables that grow with use are kept, and how they are purged.
    let retention: RetentionPolicy
    let settings: SessionSettings
    let database: Connection
    let logger: Logger
    let client: AppleClient
    /// Rows handled per pass and kind.
    let batch: Int
    /// Seconds one pass may spend calling Apple, half for each kind.
    let passTime: Double
    let clock: any WallClock
    /// The webhook deliveries of each pass; nil when no endpoint is configured, or when a
    /// `WebhookDeliveryLoop` delivers them instead.
    let webhooks: WebhookSender?
    /// Where events of the jobs' own changes are recorded.
    let outbox: WebhookOutbox
    /// The checks of Apple's tokens of each pass; nil when an `AppleValidationLoop` makes them.
    let validator: AppleValidator?
    /// The daily check's pace: what a pass sheds.
    let pace: AppleValidationPace
    /// The app's declared collections, whose tombstones the passes purge.
    let syncSchema: SyncSchema
    /// Where the purge of unused guests goes on in the next pass.
    let guestSweep = GuestSweep()

    /// - Parameters:
    ///   - deliversWebhooks: false when a `WebhookDeliveryLoop` delivers the webhooks: the passes
    ///     then only record the events of the jobs' own changes.
    ///   - validatesAppleTokens: false when an `AppleValidationLoop` checks Apple's tokens: the
    ///     passes then only shed the overdue checks.
    ///   - pace: the daily check's rate ceiling, lanes and shedding; by default the Apple settings'.
    package init(
        apple: AppleServices, settings: SessionSettings, database: Connection, logger: Logger, webhooks: WebhookSettings? = nil,
        retention: RetentionPolicy = RetentionPolicy(), batch: Int = 100, passTime: Double = 60, clock: any WallClock = SystemClock(),
        deliversWebhooks: Bool = true, validatesAppleTokens: Bool = true, pace: AppleValidationPace? = nil,
        syncSchema: SyncSchema = .empty
    ) {
        self.syncSchema = syncSchema
        self.retention = retention
        self.apple = apple
        self.settings = settings
        self.database = database
        self.logger = logger
        self.client = apple.makeClient()
        self.batch = batch
        self.passTime = passTime
        self.clock = clock
        self.webhooks =
            deliversWebhooks
            ? webhooks.map { WebhookSender(settings: $0, database: database.configuration, logger: logger, clock: clock) } : nil
        self.outbox = webhooks?.outbox ?? WebhookOutbox()
        self.pace = pace ?? apple.settings.validationPace
        self.validator =
            validatesAppleTokens
            ? AppleValidator(
                apple: apple, dataKeys: settings.dataKeys, database: database.configuration, webhooks: webhooks, logger: logger,
                clock: clock,
                pace: self.pace) : nil
    }

    /// One pass over everything that is due.
    package func runOnce() throws -> Summary {
        var summary = Summary()
        try sendRevocations(&summary, until: clock.now() + passTime / 2)
        summary.validationsShed = try shedOverdueValidations()
        try validateAppleTokens(&summary, until: clock.now() + passTime / 2)
        if let webhooks { summary.webhooks = try webhooks.deliver(until: clock.now() + passTime / 2) }
        summary.guestsPurged = try purgeUnusedGuests()
        for collection in syncSchema.collections {
            guard let days = collection.tombstoneDays else { continue }
            // Up to 1,000 a pass, each user's in a transaction of its own.
            for (userID, tombstones) in try SyncRecords.tombstones(of: collection.name, olderThanDays: days, limit: 1_000, on: database) {
                summary.tombstonesPurged += try database.transaction {
                    try SyncRecords.purge(tombstones, of: userID, collection: collection.name, on: database)
                }
            }
        }
        let purge = try retention.purge(on: database, clock: clock)
        summary.purged = purge.total
        if !purge.unfinished.isEmpty {
            logger.warning(
                "purge: rows past their retention remain after the pass's time; the next pass goes on",
                metadata: ["tables": "\(purge.unfinished.map(\.rawValue).joined(separator: ","))", "deleted": "\(purge.total)"])
        }
        return summary
    }

    /// Deletes up to `batch` guests unused for `settings.guestRetentionDays`, each in its own
    /// transaction with its `user.deleted` event (`guest_expired`), among the next page of older
    /// guests (`GuestSweep`).
    /// - Returns: how many were deleted.
    func purgeUnusedGuests() throws -> Int {
        let days = settings.guestRetentionDays
        let page = try Guests.past(retentionDays: days, after: guestSweep.position, limit: GuestSweep.pageSize, on: database)
        var position = guestSweep.position
        var reachedEnd = page.count < GuestSweep.pageSize
        var purged = 0
        for guest in page {
            if purged == batch {
                reachedEnd = false
                break
            }
            position = guest.position
            guard guest.unused else { continue }
            let deleted = try database.transaction {
                guard try Guests.purge(guest.userID, unusedForDays: days, on: database) else { return false }
                try outbox.record(
                    .userDeleted(source: "guest_expired", anonymised: false), userID: guest.userID, at: clock.now(), on: database)
                return true
            }
            if deleted { purged += 1 }
        }
        guestSweep.position = reachedEnd ? .start : position
        if purged > 0 { logger.info("guests purged", metadata: ["count": "\(purged)", "unusedForDays": "\(days)"]) }
        return purged
    }

    /// Revokes at Apple, with the client id that minted each token; failures wait for their retry.
    /// Rows are claimed one at a time, so those not reached before `deadline` keep their turn.
    func sendRevocations(_ summary: inout Summary, until deadline: Double) throws {
        for _ in 0..<batch {
            guard clock.now() < deadline,
                let pending = try AppleRevocationOutbox.claimDue(
                    limit: 1, retryDelay: { RetryPolicy.appleRevocations.hold(forAttempt: $0) }, on: database
                ).first
            else { return }
            guard let token = settings.dataKeys.open(pending.token) else {
                logger.error(
                    "revocation: cannot decrypt the Apple token (data key missing?)",
                    metadata: ["id": "\(pending.id)", "key": "\(pending.token.keyID)"])
                try AppleRevocationOutbox.markFailed(pending.id, error: "data key \(pending.token.keyID) cannot decrypt", on: database)
                summary.revocationsFailed += 1
                continue
            }
            do {
                try client.revoke(token, kind: .refreshToken, clientID: pending.token.clientID)
                try AppleRevocationOutbox.markDone(pending.id, on: database)
                summary.revoked += 1
            } catch let error as AppleAPIError {
                logger.warning(
                    "revocation at Apple failed; will retry",
                    metadata: ["id": "\(pending.id)", "attempt": "\(pending.attempts)", "error": "\(error)"])
                try AppleRevocationOutbox.markFailed(pending.id, error: error.description, on: database)
                summary.revocationsFailed += 1
                if error.code == .unreachable { return stopped("revocations") }
            }
        }
    }

    /// Logs that a kind stops for this pass because Apple could not be reached.
    private func stopped(_ kind: String) {
        logger.warning("Apple could not be reached: the remaining \(kind) wait for the next pass")
    }

    /// Sheds what the daily check cannot clear: the checks overdue by more than `pace.shedAfter`
    /// (a day), oldest first, each moved to its next slot (its time of day, tomorrow at the
    /// latest), in statements of `pace.shedBatch`, up to `pace.shedStatements` a pass. Each
    /// statement that moved any is logged with its count and recorded in the audit log
    /// (`apple_validations_shed`).
    /// - Returns: how many were moved.
    func shedOverdueValidations() throws -> Int {
        var shed = 0
        for _ in 0..<pace.shedStatements {
            // The move and its audit record commit together.
            let moved = try database.transaction {
                let moved = try AppleValidations.shedOverdue(by: pace.shedAfter, slot: pace.slot, limit: pace.shedBatch, on: database)
                if moved > 0 {
                    try AuditLog.record(
                        "apple_validations_shed", userID: nil, detail: #"{"count":\#(moved),"overdueBySeconds":\#(pace.shedAfter)}"#,
                        on: database)
                }
                return moved
            }
            guard moved > 0 else { break }
            shed += moved
            if moved < pace.shedBatch { break }
        }
        if shed > 0 {
            logger.warning(
                "Apple token checks overdue by more than a day were shed: each moved to its next daily slot unchecked",
                metadata: ["count": "\(shed)", "overdueBySeconds": "\(pace.shedAfter)"])
        }
        return shed
    }

    /// Checks the due Apple tokens on the validator's lanes until nothing is due, Apple cannot be
    /// reached, or `deadline` passes; the lanes' threads are joined, and their connections closed,
    /// before it returns.
    /// - Throws: the first database error of a lane.
    func validateAppleTokens(_ summary: inout Summary, until deadline: Double) throws {
        guard let validator else { return }
        let round = AppleValidator.Round("apple", outcome: AppleValidator.Outcome())
        let lane = AppleValidator.Lane(connection: database, client: client)
        validator.run(round, with: lane, until: deadline, stopped: { false })
        let (outcome, _, error) = round.result
        summary.validated += outcome.validated
        summary.consentRevoked += outcome.consentRevoked
        summary.validationsFailed += outcome.failed
        if let error { throw error }
    }
}
