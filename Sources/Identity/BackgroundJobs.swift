import Accounts
import AppleID
package import Logging
package import MariaDB

/// The work `siwa jobs` does outside requests: send queued revocations to Apple, re-validate
/// Apple refresh tokens once a day, purge expired nonces and web sign-ins and month-old notification
/// records. Each pass is bounded.
package struct BackgroundJobs {
    /// What one pass did.
    package struct Summary: Sendable, Equatable, CustomStringConvertible {
        package var revoked = 0
        package var revocationsFailed = 0
        package var validated = 0
        package var consentRevoked = 0
        package var validationsFailed = 0
        package var purged: UInt64 = 0

        package init() {}

        /// Whether the pass found anything to do.
        package var isEmpty: Bool { self == Summary() }

        package var description: String {
            "revoked=\(revoked) revocationsFailed=\(revocationsFailed) validated=\(validated) "
                + "consentRevoked=\(consentRevoked) validationsFailed=\(validationsFailed) purged=\(purged)"
        }
    }

    let apple: AppleServices
    let settings: SessionSettings
    let database: Connection
    let logger: Logger
    let client: AppleClient
    /// Rows handled per pass and kind.
    let batch: Int

    package init(apple: AppleServices, settings: SessionSettings, database: Connection, logger: Logger, batch: Int = 100) {
        self.apple = apple
        self.settings = settings
        self.database = database
        self.logger = logger
        self.client = apple.makeClient()
        self.batch = batch
    }

    /// One pass over everything that is due.
    package func runOnce() throws -> Summary {
        var summary = Summary()
        try sendRevocations(&summary)
        try validateAppleTokens(&summary)
        summary.purged =
            try Nonces.purgeExpired(on: database) + WebSignIns.purgeExpired(on: database)
            + AppleNotifications.purgeOld(on: database)
        return summary
    }

    /// Revokes at Apple, with the client id that minted each token; failures wait for their retry.
    func sendRevocations(_ summary: inout Summary) throws {
        for pending in try AppleRevocationOutbox.claimDue(limit: batch, on: database) {
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
                    metadata: ["id": "\(pending.id)", "attempt": "\(pending.attempts)", "error": "\(error.code.rawValue)"])
                try AppleRevocationOutbox.markFailed(pending.id, error: error.description, on: database)
                summary.revocationsFailed += 1
            }
        }
    }

    /// Asks Apple whether each due refresh token is still good. `invalid_grant` means consent was
    /// withdrawn: the user's sessions end. Apple unreachable changes nothing; the check is retried.
    func validateAppleTokens(_ summary: inout Summary) throws {
        for due in try AppleValidations.claimDue(limit: batch, on: database) {
            guard let token = settings.dataKeys.open(due.token) else {
                logger.error("validation: cannot decrypt the Apple token (data key missing?)", metadata: ["identity": "\(due.identityID)"])
                summary.validationsFailed += 1
                continue
            }
            do {
                _ = try client.refresh(token, clientID: due.token.clientID)
                try AppleValidations.markValid(due.identityID, on: database)
                summary.validated += 1
            } catch let error as AppleAPIError where error.code == .invalidGrant {
                let ended = try database.transaction {
                    try AppleValidations.consentRevoked(
                        userID: due.userID, identityID: due.identityID, source: "daily_validation", on: database)
                }
                logger.notice("Apple consent withdrawn: sessions ended", metadata: ["user": "\(due.userID)", "sessions": "\(ended)"])
                summary.consentRevoked += 1
            } catch let error as AppleAPIError {
                logger.warning(
                    "validation at Apple failed; will retry",
                    metadata: ["identity": "\(due.identityID)", "error": "\(error.code.rawValue)"])
                summary.validationsFailed += 1
            }
        }
    }
}
