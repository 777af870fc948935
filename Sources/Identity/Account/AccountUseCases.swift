package import AccountData
package import Accounts
import AppleID
import CoreMetrics
import JOSE
import Logging
package import MariaDB
import Telemetry

/// What a person can take with them (`GET /auth/account/export`, `siwa admin export`): everything
/// stored about one user, without a token, a token hash or a key.
package struct AccountExport: Sendable {
    package var record: UserRecord
    /// The synced progress, achievements, profile and declared collections' records, whole.
    package var progress: SyncDelta
    /// The declared collections the records are of.
    package var collections: DeclaredCollections
    /// Unix milliseconds.
    package var exportedAt: Int64
}

/// A user's account: their profile, the export of everything stored about them, and deleting
/// it with everything theirs.
package struct AccountUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension AccountUseCases {
    /// The latest audit events in a record or an export.
    package static let recordAuditEvents = 1000

    /// Exports a user may make in an hour.
    package static let exportsPerHour = 5

    /// Everything stored about `userID`; nil when there is no such user.
    package func export(userID: UInt64) throws -> AccountExport? {
        guard let record = try UserRecord.load(userID: userID, auditLimit: Self.recordAuditEvents, on: database),
            let progress = try SyncEngine.sync(
                userID: userID, changes: SyncChanges(cursor: nil, limit: .max), on: database,
                collections: core.collections)
        else { return nil }
        return AccountExport(record: record, progress: progress, collections: core.collections, exportedAt: Int64(clock.now() * 1000))
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

    /// The caller's profile.
    /// - Throws: `IdentityError(.accountGone)` when the account no longer exists.
    package func profile(of principal: Principal) throws -> Profile {
        guard let profile = try Profile.load(userID: principal.userID, on: database) else { throw IdentityError(.accountGone) }
        return profile
    }

    /// Deletes the caller's account and everything theirs in one transaction. The revocation at
    /// Apple waits in the outbox for the background jobs, so this never waits on Apple.
    /// - Throws: `IdentityError(.notFound)` when the account is already gone.
    package func deleteAccount(of principal: Principal, remoteAddress: String?) throws {
        guard try deleteUser(principal.userID, source: "user", remoteAddress: remoteAddress) else { throw IdentityError(.notFound) }
    }

    /// Deletes `userID` and everything theirs in one transaction (their Apple tokens queued for
    /// revocation), and reports `user.deleted` with `source` (`user`, `operator`).
    /// - Returns: false when there was no such user.
    /// - Parameter alongside: more writes of the same transaction (an operator's audit event).
    package func deleteUser(
        _ userID: UInt64, source: String, remoteAddress: String?, alongside: (Connection) throws -> Void = { _ in }
    ) throws -> Bool {
        let deleted = try retryingConflicts {
            try transaction { connection in
                guard try AccountDeletion.delete(userID: userID, source: source, remoteAddress: remoteAddress, on: connection) else {
                    return false
                }
                try alongside(connection)
                try report(.userDeleted(source: source, anonymised: false), userID: userID, on: connection)
                return true
            }
        }
        if deleted {
            core.sessionCache.forget(userID: userID)
            logger.notice("account deleted", metadata: ["user": "\(userID)", "source": "\(source)"])
        }
        return deleted
    }
}
