import AccountData
import Accounts
import AppleID
import CoreMetrics
import JOSE
import Logging
import MariaDB
import StrictJSON
import Telemetry

/// How one of Apple's server-to-server notifications was handled (the `status` of the answer).
package enum NotificationOutcome: String, Sendable {
    case processed
    /// No identity has this `sub` (never signed in, or already deleted).
    case unknownUser = "unknown_user"
    /// A type this server does not act on.
    case ignored
    /// Its `jti` was handled before; nothing changed.
    case duplicate
    /// An email notification for an address that is not the user's relay address: nothing changed.
    case unknownAddress = "unknown_address"
}

/// Apple's server-to-server notifications (`POST /auth/apple/notifications`): consent revoked,
/// account deleted, email forwarding changed.
package struct AppleNotificationUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension AppleNotificationUseCases {
    /// Handles one of Apple's server-to-server notifications: verifies it like an identity token
    /// at the injected clock; then, in one transaction, records its `jti` (a duplicate changes
    /// nothing), applies its effect and writes an audit event. Nothing here calls Apple.
    /// - Returns: what was done.
    /// - Throws: `SignInError` for a payload that does not verify.
    package func handleNotification(payload: String) throws -> NotificationOutcome {
        let apple = try requireApple()
        let notification: ServerNotification
        do {
            notification = try apple.notifications.verify(payload, now: clock.now())
        } catch let error as SignInError {
            logger.warning("Apple notification refused", metadata: ["reason": "\(error.code.rawValue)"])
            core.metrics.notifications["unverified", "refused"].increment()
            throw error
        }
        let (outcome, userID) = try retryingConflicts {
            try transaction { connection in try apply(notification, apple: apple.settings, on: connection) }
        }
        // Consent revoked or the account deleted: its sessions ended.
        if let userID, outcome == .processed { core.sessionCache.forget(userID: userID) }
        logger.info("Apple notification", metadata: ["type": "\(notification.kind.name)", "outcome": "\(outcome.rawValue)"])
        core.metrics.notifications[notification.kind.name, outcome.rawValue].increment()
        return outcome
    }

    /// Records the notification and applies its effect; runs inside a transaction.
    /// - Returns: what was done, and to which user.
    private func apply(
        _ notification: ServerNotification, apple: AppleSettings, on connection: Connection
    ) throws -> (NotificationOutcome, UInt64?) {
        guard
            try AppleNotifications.record(
                jti: notification.jti, type: notification.kind.name, subjectHash: SHA256.hash(Array(notification.subject.utf8)),
                audience: notification.audience, eventTime: notification.eventTime, on: connection)
        else { return (.duplicate, nil) }
        let outcome: NotificationOutcome
        var userID: UInt64?
        if let identity = try AppleNotifications.identity(teamID: apple.teamID, subject: notification.subject, on: connection) {
            userID = identity.userID
            switch notification.kind {
            case .consentRevoked:
                let ended = try AppleValidations.consentRevoked(
                    userID: identity.userID, identityID: identity.identityID, source: "apple_notification", on: connection)
                try report(.appleConsentRevoked(source: "apple_notification", clientID: nil), userID: identity.userID, on: connection)
                try report(.sessionsRevoked(ids: ended, reason: "apple_consent_revoked"), userID: identity.userID, on: connection)
                outcome = .processed
            case .accountDeleted:
                // The Apple Account is gone, so there is nothing left to revoke at Apple.
                if apple.anonymiseOnAccountDelete {
                    _ = try AccountDeletion.anonymise(userID: identity.userID, source: "apple_notification", on: connection)
                } else {
                    _ = try AccountDeletion.delete(
                        userID: identity.userID, revokeAtApple: false, source: "apple_notification", remoteAddress: nil, on: connection)
                }
                try report(
                    .userDeleted(source: "apple_account_delete", anonymised: apple.anonymiseOnAccountDelete), userID: identity.userID,
                    on: connection)
                outcome = .processed
            case .emailDisabled, .emailEnabled:
                let matched = try AppleNotifications.setForwarding(
                    userID: identity.userID, address: notification.email, enabled: notification.kind == .emailEnabled, on: connection)
                if matched {
                    try report(
                        .emailForwardingChanged(address: notification.email, enabled: notification.kind == .emailEnabled),
                        userID: identity.userID, on: connection)
                }
                outcome = matched ? .processed : .unknownAddress
            case .other:
                outcome = .ignored
            }
        } else {
            outcome = .unknownUser
        }
        try AppleNotifications.finish(jti: notification.jti, outcome: outcome.rawValue, on: connection)
        try AuditLog.record(
            "apple_notification", userID: userID,
            detail: JSONText.object([
                ("jti", .string(notification.jti)), ("type", .string(notification.kind.name)), ("outcome", .string(outcome.rawValue)),
            ]), on: connection)
        return (outcome, userID)
    }
}
