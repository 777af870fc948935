package import AccountData
import AppleID
import CoreMetrics
import JOSE
import Logging
import MariaDB
import Telemetry

/// Sync (`POST /sync`): a device's changes merged into the user's state, and what changed
/// since the device's cursor.
package struct SyncUseCases: UseCase {
    package let context: WorkerContext

    package init(context: WorkerContext) { self.context = context }
}

extension SyncUseCases {
    /// Merges a device's changes into the user's synced state and returns what changed since the
    /// device's cursor. `uncheckedSession` is the session of an access token whose activity the
    /// sync's own statements check (see `authenticateDeferringSessionCheck`).
    ///
    /// A cursor the user was never given (its tag is not the user's: another user's, forged, or
    /// from before cursors were tagged) is dropped: the answer holds the whole state with `resync`.
    /// The answer's cursor is tagged for the user (`SyncCursorBinding`).
    /// - Throws: `IdentityError(.sessionEnded)` when that session is no longer active;
    ///   `.syncLimitExceeded` when a declared collection would hold more records than it allows.
    package func sync(_ principal: Principal, uncheckedSession: UInt64?, changes presented: SyncChanges) throws -> SyncDelta {
        let metrics = core.metrics
        var changes = presented
        var refusedCursor = false
        if let cursor = changes.cursor {
            let binding = try syncCursors()
            if !(changes.cursorTag.map { binding.accepts($0, for: cursor, userID: principal.userID) } ?? false) {
                changes.cursor = nil
                refusedCursor = true
                metrics.syncCursorsRefused.increment()
            }
        }
        metrics.syncBatchSize.record(changes.records.count)
        return try metrics.counting(metrics.syncRequests, [], success: "ok") {
            let delta: SyncDelta?
            do {
                delta = try retryingConflicts {
                    try SyncEngine.sync(
                        userID: principal.userID, session: uncheckedSession, changes: changes, on: database, group: core.syncCommits,
                        cache: core.syncCache, collections: core.collections)
                }
            } catch let error as SyncLimitExceeded {
                throw IdentityError(.syncLimitExceeded, "`\(error.path)` \(error.problem)")
            }
            guard let delta else {
                logger.info(
                    "sync refused: the session is not active",
                    metadata: ["user": "\(principal.userID)", "session": "\(uncheckedSession.map(String.init) ?? "cookie")"])
                throw IdentityError(.sessionEnded)
            }
            metrics.syncRowsWritten.increment(by: delta.changed)
            var answer = delta
            if refusedCursor { answer.resync = true }
            answer.cursorTag = try syncCursors().tag(answer.cursor, userID: principal.userID)
            return answer
        }
    }
}

extension SyncUseCases {
    fileprivate func syncCursors() throws -> SyncCursorBinding {
        guard let binding = core.syncCursors else { throw IdentityError(.notConfigured, "sessions are not configured on this server") }
        return binding
    }
}
