package import AccountData
package import Accounts
import JOSE
import MariaDB

/// What a person can take with them (`GET /auth/account/export`, `siwa admin export`): everything
/// stored about one user, without a token, a token hash or a key.
package struct AccountExport: Sendable {
    package var record: UserRecord
    /// The synced progress, achievements and profile, whole.
    package var progress: SyncDelta
    /// Unix milliseconds.
    package var exportedAt: Int64
}

/// The operator's levers (`siwa admin`): find, show, disable and enable users, end their sessions,
/// export and delete them. Every change records an audit event `admin_<action>` naming the
/// operator, in the transaction of the change.
extension Operations {
    /// The latest audit events in a record or an export.
    package static let recordAuditEvents = 1000
    /// Exports a user may make in an hour.
    package static let exportsPerHour = 5

    /// Users whose id (all digits), any email address (with `@`, exact) or Apple `sub` is `query`.
    package func findUsers(_ query: String) throws -> [UserSummary] {
        try UserSummary.find(query, on: database)
    }

    /// Everything stored about `userID`; nil when there is no such user.
    package func export(userID: UInt64) throws -> AccountExport? {
        guard let record = try UserRecord.load(userID: userID, auditLimit: Self.recordAuditEvents, on: database),
            let progress = try SyncStore.sync(
                userID: userID, changes: SyncChanges(cursor: nil, profile: nil, progress: [], achievements: []), on: database)
        else { return nil }
        return AccountExport(record: record, progress: progress, exportedAt: Int64(clock.now() * 1000))
    }

    /// The caller's own export, recorded as `account_exported`.
    /// - Throws: `IdentityError(.exportLimited)` after `exportsPerHour` exports in the last hour,
    ///   with the seconds until the next is allowed as its reason; `.accountGone`.
    package func exportAccount(of principal: Principal, remoteAddress: String?) throws -> AccountExport {
        let wait = try retryingConflicts {
            try transaction { connection -> Int64? in
                // The user's row, locked, orders concurrent exports of one user.
                guard try UserLock.lock(principal.userID, on: connection) else { throw IdentityError(.accountGone) }
                let recent = try AuditLog.exportsInLastHour(userID: principal.userID, on: connection)
                if recent.count >= Self.exportsPerHour { return max(1, recent.secondsToWait) }
                try AuditLog.record(
                    "account_exported", userID: principal.userID, sessionID: principal.sessionID, remoteAddress: remoteAddress,
                    on: connection)
                return nil
            }
        }
        if let wait { throw IdentityError(.exportLimited, String(wait)) }
        guard let export = try export(userID: principal.userID) else { throw IdentityError(.accountGone) }
        return export
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
        try deleteUser(userID, source: "operator", remoteAddress: nil) { connection in
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
