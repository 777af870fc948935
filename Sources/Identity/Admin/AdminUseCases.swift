import AccountData
package import Accounts
import JOSE
import MariaDB
import StrictJSON

/// The operator's levers (`siwa admin`): find, show, disable and enable users, end their sessions,
/// export and delete them. Every change records an audit event `admin_<action>` naming the
/// operator, in the transaction of the change.
package struct AdminUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension AdminUseCases {
    /// Everything stored about `userID`; nil when there is no such user.
    package func export(userID: UInt64) throws -> AccountExport? {
        try AccountUseCases(context: context).export(userID: userID)
    }

    /// Users whose id (all digits), any email address (with `@`, exact) or Apple `sub` is `query`.
    package func findUsers(_ query: String) throws -> [UserSummary] {
        try UserSummary.find(query, on: database)
    }

    /// Disables `userID` (`reason` kept for operators) and ends every session of theirs.
    /// - Returns: the ids of the sessions that ended; nil when there is no such user.
    package func disableUser(_ userID: UInt64, reason: String?, by operatorName: String) throws -> [UInt64]? {
        let ended = try retryingConflicts {
            try transaction { connection -> [UInt64]? in
                guard let ended = try UserStatus.disable(userID, reason: reason, on: connection) else { return nil }
                try recordAdminAction("disable", userID: userID, by: operatorName, reason: reason, on: connection)
                if !ended.isEmpty { try report(.sessionsRevoked(ids: ended, reason: "user_disabled"), userID: userID, on: connection) }
                return ended
            }
        }
        if ended != nil { core.sessionCache.forget(userID: userID) }
        return ended
    }

    /// Enables `userID` again; false when there is no such user.
    package func enableUser(_ userID: UInt64, by operatorName: String) throws -> Bool {
        try retryingConflicts {
            try transaction { connection in
                guard try UserStatus.enable(userID, on: connection) else { return false }
                try recordAdminAction("enable", userID: userID, by: operatorName, on: connection)
                return true
            }
        }
    }

    /// Ends the active session `sessionID`, whoever's it is; false when there is no such active session.
    package func revokeSession(_ sessionID: UInt64, by operatorName: String) throws -> Bool {
        let revoked = try retryingConflicts {
            try transaction { connection -> UInt64? in
                guard let owner = try Sessions.owner(ofUnrevoked: sessionID, on: connection),
                    try Sessions.revoke(sessionID, of: owner, reason: "revoked_by_operator", on: connection)
                else { return nil }
                try recordAdminAction("revoke_session", userID: owner, sessionID: sessionID, by: operatorName, on: connection)
                try report(.sessionsRevoked(ids: [sessionID], reason: "revoked_by_operator"), userID: owner, on: connection)
                return owner
            }
        }
        if let revoked { core.sessionCache.forget(userID: revoked, sessionID: sessionID) }
        return revoked != nil
    }

    /// Deletes `userID` as the account deletion does, recording the operator; false when there is no such user.
    package func deleteUser(_ userID: UInt64, by operatorName: String) throws -> Bool {
        try AccountUseCases(context: context).deleteUser(userID, source: "operator", remoteAddress: nil) { connection in
            try recordAdminAction("delete", userID: userID, by: operatorName, on: connection)
        }
    }

    /// The latest audit events, newest first: of `userID`, or of everyone; after `afterID` when given.
    package func auditEvents(userID: UInt64?, afterID: UInt64? = nil, limit: Int) throws -> [UserRecord.AuditEvent] {
        try AuditLog.recent(userID: userID, afterID: afterID, limit: limit, on: database)
    }

    /// The audit event `admin_<action>` of an operator's change.
    private func recordAdminAction(
        _ action: String, userID: UInt64, sessionID: UInt64? = nil, by operatorName: String, reason: String? = nil,
        on connection: Connection
    ) throws {
        try AuditLog.record(
            "admin_" + action, userID: userID, sessionID: sessionID,
            detail: JSONText.object([("operator", .string(operatorName)), ("reason", reason.map { .string($0) })]), on: connection)
    }
}
