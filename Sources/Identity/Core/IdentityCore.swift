package import AccountData
package import Accounts
import AppleID
package import Logging
package import MariaDB
package import Threads

/// The process-wide part of the use cases, shared by every worker thread: the clock, Apple's
/// services, the session settings and the sync's shared state.
package final class IdentityCore: Sendable {
    package let clock: any WallClock
    /// nil when Sign in with Apple is not configured (the operations that need it refuse).
    package let apple: AppleServices?
    /// nil when sessions are not configured (the operations that need them refuse).
    package let sessions: SessionSettings?
    /// Commits concurrent sync writes of the worker threads in shared transactions.
    package let syncCommits: SyncCommitter
    /// The synced state of recently active users, shared by the worker threads.
    package let syncCache: SyncCache
    /// The collections the app declared, synced besides the built-in model.
    package let collections: DeclaredCollections
    /// Binds the sync cursors given to a user to that user; nil without sessions (no sync then).
    package let syncCursors: SyncCursorBinding?
    /// The sessions seen active recently, behind the database (see `SessionCache`).
    package let sessionCache: SessionCache
    /// Where lifecycle events for the app's backend are recorded (nothing when no endpoint is set).
    package let webhooks: WebhookOutbox
    /// The use cases' counters.
    package let metrics: IdentityMetrics
    /// How many database servers the connections may use (the nodes of a cluster).
    package let databaseServers: Int
    /// The ids of new users and sessions, reserved in blocks.
    package let ids = IDBlocks()

    /// - Parameters:
    ///   - database: where the sync committer opens its own connections.
    ///   - collections: the app's declared sync collections.
    package init(
        apple: AppleServices?, sessions: SessionSettings?, database: Configuration, webhooks: WebhookSettings? = nil,
        clock: any WallClock = SystemClock(), metrics: IdentityMetrics = IdentityMetrics(), collections: DeclaredCollections = .none
    ) {
        self.collections = collections
        self.metrics = metrics
        self.syncCache = SyncCache(onLookup: metrics.syncCacheLookup)
        self.databaseServers = database.endpoints.count
        self.apple = apple
        self.sessions = sessions
        self.syncCursors = sessions.map { SyncCursorBinding(dataKeys: $0.dataKeys) }
        self.webhooks = webhooks?.outbox ?? WebhookOutbox()
        self.clock = clock
        self.syncCommits = SyncCommitter(database: database)
        self.sessionCache = SessionCache(database: database)
    }

    /// The threads of the process's shared parts as services, in the order they start; `siwa serve`
    /// registers them in its `ServiceGroup`, after the cluster's node checks and before its signal
    /// thread and workers (which use them), so they stop after the workers.
    ///
    /// - Apple's key refresher: its start fetches the keys in the background (`then` logs the
    ///   outcome), so the first sign-in need not wait for them; later refreshes start lazily, when a
    ///   token finds the keys past their lifetime.
    /// - The session cache's poller and the sync committers start lazily, on their first use (a
    ///   process that never sees a session or a sync holds no connection for them), and log and
    ///   count a thread that cannot start; they are registered for their stop, which closes their
    ///   connections.
    /// - Parameter logger: where the first fetch of Apple's keys is logged.
    package func services(logger: Logger) -> [Service] {
        let keys = apple?.keys
        return [
            Service(
                "Apple key refresher",
                start: {
                    try (keys as? AppleKeyCache)?.refreshInBackground { status in
                        logger.notice(
                            "Apple keys",
                            metadata: [
                                "state": "\(status.health.rawValue)", "kids": "\(status.keyIDs)", "error": "\(status.lastError ?? "-")",
                            ])
                    }
                },
                stop: { keys?.stop() }),
            Service("session cache poller", stop: sessionCache.stop),
            Service("sync committers", stop: syncCommits.stop),
        ]
    }

    /// Stops and joins the threads of `services(logger:)`, last first, without starting any (for
    /// tests and tools that start none of them but may have used them). Call after the workers stopped.
    package func stop() {
        for service in services(logger: Logger(label: "siwa")).reversed() { service.stopAndJoin() }
    }
}
