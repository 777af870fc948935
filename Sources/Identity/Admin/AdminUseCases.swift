import AccountData
package import Accounts
import JOSE
import MariaDB
import StrictJSON

/// The operator's levers (`siwa admin`): find, show, disable and enable users, end their sessions,
/// export and delete them. Every change records an audit event `admin_<action>` naming the
/// operator, in the transaction of the change; every read of a person's data (find, show,
/// export) records one before the data is handed back.
package struct AdminUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension AdminUseCases {
    /// Everything stored about `userID`; nil when there is no such user. Not recorded: the
    /// operator's commands read through `show` and `exportUser`, which are.
    package func export(userID: UInt64) throws -> AccountExport? {
        try AccountUseCases(context: context).export(userID: userID)
    }

    /// Everything stored about `userID`, for `siwa admin show`, recorded first as `admin_show`
    /// naming the operator; nil when there is no such user.
    package func show(userID: UInt64, by operatorName: String) throws -> AccountExport? {
        try recordRead("show", userID: userID, by: operatorName) ? export(userID: userID) : nil
    }

    /// Everything stored about `userID`, for `siwa admin export`, recorded first as `admin_export`
    /// naming the operator (not as the user's own `account_exported`, so it counts nothing against
    /// the user's exports an hour); nil when there is no such user.
    package func exportUser(userID: UInt64, by operatorName: String) throws -> AccountExport? {
        try recordRead("export", userID: userID, by: operatorName) ? export(userID: userID) : nil
    }

    /// Users whose id (all digits), any email address (with `@`, exact) or Apple `sub` is `query`,
    /// each recorded as `admin_find` naming the operator (the answer shows their name and email).
    package func findUsers(_ query: String, by operatorName: String) throws -> [UserSummary] {
        let users = try UserSummary.find(query, on: database)
        guard !users.isEmpty else { return users }
        try retryingConflicts {
            try transaction { connection in
                for user in users { try recordAdminAction("find", userID: user.userID, by: operatorName, on: connection) }
            }
        }
        return users
    }

    /// The user `reference` names: a user id (all digits), an Apple `sub`, or an email address
    /// (with `@`, exact, any of a user's, a private relay address among them). Read through the
    /// same indexed lookups as `findUsers`, and not recorded: the action that follows is.
    package func lookUpUser(_ reference: String) throws -> UserLookup {
        let users = try UserSummary.find(reference, on: database)
        switch users.count {
        case 0: return .none
        case 1: return .one(users[0].userID)
        default: return .several(users.map(\.userID).sorted())
        }
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

    /// Records `admin_<action>` for `userID` in a transaction of its own, before what the
    /// operator reads is shown; false when there is no such user (nothing recorded).
    private func recordRead(_ action: String, userID: UInt64, by operatorName: String) throws -> Bool {
        try retryingConflicts {
            try transaction { connection in
                guard try UserLock.lock(userID, on: connection) else { return false }
                try recordAdminAction(action, userID: userID, by: operatorName, on: connection)
                return true
            }
        }
    }

    /// The audit event `admin_<action>` of an operator's read or change.
    private func recordAdminAction(
        _ action: String, userID: UInt64, sessionID: UInt64? = nil, by operatorName: String, reason: String? = nil,
        on connection: Connection
    ) throws {
        try AuditLog.record(
            "admin_" + action, userID: userID, sessionID: sessionID,
            detail: JSONText.object([("operator", .string(operatorName)), ("reason", reason.map { .string($0) })]), on: connection)
    }
}
