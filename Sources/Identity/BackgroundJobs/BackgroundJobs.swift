import Accounts
import AppleID
package import Logging
package import MariaDB
package import SyncRules

/// The work `siwa jobs` does outside requests: send queued revocations to Apple, re-validate
/// Apple refresh tokens once a day, deliver the lifecycle webhooks, purge the rows of the tables
/// that grow with use past their retention (`RetentionPolicy`), and the tombstones of deleted
/// records of declared collections past their `tombstoneDays`. Each pass is bounded: each kind
/// of call to Apple handles at most `batch` rows within its own half of the pass's time, and stops
/// for the pass once Apple could not be reached, so a hanging Apple holds neither the pass nor the
/// other kind. The webhooks are delivered by a running `siwa jobs`'s `WebhookDeliveryLoop`, as soon
/// as they are due; a pass of `siwa jobs --once` (and of the tests) delivers everything due within
/// another half of its time, with the same lanes and threads.
package struct BackgroundJobs {
    /// What one pass did.
    package struct Summary: Sendable, Equatable, CustomStringConvertible {
        package var revoked = 0
        package var revocationsFailed = 0
        package var validated = 0
        package var consentRevoked = 0
        package var validationsFailed = 0
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
                + "tombstonesPurged=\(tombstonesPurged)"
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
    /// The app's declared collections, whose tombstones the passes purge.
    let syncSchema: SyncSchema
    /// Where the purge of unused guests goes on in the next pass.
    let guestSweep = GuestSweep()

    /// - Parameter deliversWebhooks: false when a `WebhookDeliveryLoop` delivers the webhooks: the
    ///   passes then only record the events of the jobs' own changes.
    package init(
        apple: AppleServices, settings: SessionSettings, database: Connection, logger: Logger, webhooks: WebhookSettings? = nil,
        retention: RetentionPolicy = RetentionPolicy(), batch: Int = 100, passTime: Double = 60, clock: any WallClock = SystemClock(),
        deliversWebhooks: Bool = true, syncSchema: SyncSchema = .empty
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
    }

    /// One pass over everything that is due.
    package func runOnce() throws -> Summary {
        var summary = Summary()
        try sendRevocations(&summary, until: clock.now() + passTime / 2)
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

    /// The daily check's schedule.
    private var validations: RetryPolicy { .appleValidations }

    /// Asks Apple whether each due refresh token is still good, with the client id that minted it.
    /// `invalid_grant` means consent was withdrawn for that client: the sessions opened with it end. Apple unreachable changes nothing; the check is retried.
    func validateAppleTokens(_ summary: inout Summary, until deadline: Double) throws {
        for _ in 0..<batch {
            guard clock.now() < deadline,
                let due = try AppleValidations.claimDue(
                    teamID: apple.settings.teamID, limit: 1, lease: validations.hold(forAttempt: 1), on: database
                ).first
            else { return }
            guard let token = settings.dataKeys.open(due.token) else {
                logger.error("validation: cannot decrypt the Apple token (data key missing?)", metadata: ["identity": "\(due.identityID)"])
                summary.validationsFailed += 1
                continue
            }
            do {
                _ = try client.refresh(token, clientID: due.token.clientID)
                try AppleValidations.markValid(due, nextCheckIn: validations.delay(afterAttempt: 1), on: database)
                summary.validated += 1
            } catch let error as AppleAPIError where error.code == .invalidGrant {
                let ended = try database.transaction {
                    let ended = try AppleValidations.tokenRefused(due, on: database)
                    let now = clock.now()
                    try outbox.record(
                        .appleConsentRevoked(source: "token_check", clientID: due.token.clientID), userID: due.userID, at: now, on: database
                    )
                    try outbox.record(
                        .sessionsRevoked(ids: ended, reason: "apple_consent_revoked"), userID: due.userID, at: now, on: database)
                    return ended.count
                }
                logger.notice(
                    "Apple refused a refresh token (consent withdrawn): the sessions of its client id ended",
                    metadata: ["user": "\(due.userID)", "client": "\(due.token.clientID)", "sessions": "\(ended)"])
                summary.consentRevoked += 1
            } catch let error as AppleAPIError {
                logger.warning(
                    "validation at Apple failed; will retry",
                    metadata: ["identity": "\(due.identityID)", "client": "\(due.token.clientID)", "error": "\(error)"])
                summary.validationsFailed += 1
                if error.code == .unreachable { return stopped("validations") }
            }
        }
    }
}
