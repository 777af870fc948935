import Accounts
import AppleID
package import FastCGI
import Foundation
import JOSE
import Logging
import MariaDB

/// `POST /webhook/apple`: Apple's server-to-server notifications (DESIGN.md rule 7).
///
/// The payload is verified like an identity token; then, in one transaction, its `jti` is recorded
/// (a duplicate changes nothing), the effect is applied and an audit event written. Nothing here
/// calls Apple, so the answer is fast: 200 when processed, duplicate, ignored or for an unknown user;
/// 400 for a malformed body; 401 for a bad signature or claims.
package enum AppleWebhook {
    struct Body: Decodable {
        var payload: String
    }

    package static func handle(_ request: Request, _ parameters: [String: String], _ context: WorkerContext) throws -> Response {
        let apple = try context.requireApple()
        let body = try request.decodeJSON(Body.self)
        _ = try limited(body.payload, "payload", maximum: 16_384)
        let notification: ServerNotification
        do {
            notification = try apple.notifications.verify(body.payload, now: Date().timeIntervalSince1970)
        } catch let error as SignInError {
            context.logger.warning("Apple notification refused", metadata: ["reason": "\(error.code.rawValue)"])
            throw error
        }
        let outcome = try retryingConflicts {
            try context.database.transaction { try apply(notification, apple: apple.settings, context: context) }
        }
        context.logger.info(
            "Apple notification", metadata: ["type": "\(notification.kind.name)", "outcome": "\(outcome.rawValue)"])
        let answer = JSONText.object([("status", .string(outcome.rawValue))])
        return Response(status: 200, headers: [("Cache-Control", "no-store")], body: Array(answer.utf8))
    }

    /// Records the notification and applies its effect; must run inside a transaction.
    static func apply(_ notification: ServerNotification, apple: AppleSettings, context: WorkerContext) throws -> AppleNotifications.Outcome {
        let database = context.database
        guard
            try AppleNotifications.record(
                jti: notification.jti, type: notification.kind.name, subjectHash: SHA256.hash(Array(notification.subject.utf8)),
                audience: notification.audience, eventTime: notification.eventTime, on: database)
        else { return .duplicate }
        let outcome: AppleNotifications.Outcome
        var userID: UInt64?
        if let identity = try AppleNotifications.identity(teamID: apple.teamID, subject: notification.subject, on: database) {
            userID = identity.userID
            switch notification.kind {
            case .consentRevoked:
                _ = try AppleValidations.consentRevoked(
                    userID: identity.userID, identityID: identity.identityID, source: "apple_notification", on: database)
                outcome = .processed
            case .accountDeleted:
                // The Apple Account is gone, so there is nothing left to revoke at Apple.
                if apple.anonymiseOnAccountDelete {
                    _ = try AccountDeletion.anonymise(userID: identity.userID, source: "apple_notification", on: database)
                } else {
                    _ = try AccountDeletion.delete(
                        userID: identity.userID, revokeAtApple: false, source: "apple_notification", remoteAddress: nil, on: database)
                }
                outcome = .processed
            case .emailDisabled, .emailEnabled:
                _ = try AppleNotifications.setForwarding(
                    userID: identity.userID, address: notification.email, enabled: notification.kind == .emailEnabled, on: database)
                outcome = .processed
            case .other:
                outcome = .ignored
            }
        } else {
            outcome = .unknownUser
        }
        try AppleNotifications.finish(jti: notification.jti, outcome: outcome, on: database)
        try AuditLog.record(
            "apple_notification", userID: userID,
            detail: JSONText.object([
                ("jti", .string(notification.jti)), ("type", .string(notification.kind.name)), ("outcome", .string(outcome.rawValue)),
            ]), on: database)
        return outcome
    }
}
