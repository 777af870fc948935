package import Accounts
import AppleID
package import Logging
package import MariaDB

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
    package let syncCache = SyncCache()
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
    package init(
        apple: AppleServices?, sessions: SessionSettings?, database: Configuration, webhooks: WebhookSettings? = nil,
        clock: any WallClock = SystemClock(), metrics: IdentityMetrics = IdentityMetrics()
    ) {
        self.metrics = metrics
        self.databaseServers = database.endpoints.count
        self.apple = apple
        self.sessions = sessions
        self.webhooks = WebhookOutbox(endpoints: webhooks?.endpoints ?? [])
        self.clock = clock
        self.syncCommits = SyncCommitter(database: database)
        self.sessionCache = SessionCache(database: database)
    }

    /// Stops and joins the threads of the process's shared parts: the sync committers and the
    /// session cache's poller, which close their connections, and the Apple key refresher. Call
    /// after the workers stopped.
    package func stop() {
        syncCommits.stop()
        sessionCache.stop()
        apple?.keys.stop()
    }
}

/// One thread's use cases: the operations of the HTTP contract, run on this thread's database
/// connection and Apple client. Confined to the thread that made it; never shared.
package final class Operations {
    package let core: IdentityCore
    /// This thread's own database connection, for single statements (each commits by itself).
    package let database: Connection
    /// This thread's connection for transactions: without autocommit, so that a transaction's first
    /// statement begins it, one round trip less than `START TRANSACTION` (a sign-in makes nine).
    let transactions: Connection
    package let logger: Logger
    /// This thread's client for Apple's endpoints (its libcurl handle keeps connections alive),
    /// made on first use.
    private var client: AppleClient?

    /// - Parameter database: where this thread's two connections go; both open on first use.
    package init(core: IdentityCore, database: Configuration, logger: Logger) {
        self.core = core
        self.database = Connection(configuration: database)
        var manualCommit = database
        manualCommit.autocommit = false
        self.transactions = Connection(configuration: manualCommit)
        self.logger = logger
    }

    /// Runs one request's use case: all of its waits for the database share one budget, the
    /// connections' read and write timeout (`SIWA_DB_TIMEOUT`), so that a database that stops
    /// answering costs the request that long, not a timeout per wait; and a database that cannot be
    /// reached, or did not answer within it, is reported as `IdentityError(.databaseUnavailable)`.
    package func perform<T>(_ body: () throws -> T) throws -> T {
        do {
            return try DatabaseBudget.run(.seconds(database.configuration.readWriteTimeout), body)
        } catch let error as MariaDBError where error.code == .connectionLost {
            throw IdentityError(.databaseUnavailable, error.description)
        }
    }

    /// Runs `body` in one transaction on `transactions`, which it is given: committed when `body`
    /// returns, rolled back when it throws.
    /// - Throws: what `body` throws; `IdentityError(.nonceReused)` when a nonce it claimed with
    ///   `NonceClaim.claim(in:)` was used before (the refusal comes with the statement that sends
    ///   the claim, often the COMMIT).
    func transaction<T>(_ body: (Connection) throws -> T) throws -> T {
        do {
            return try transactions.transaction { try body(transactions) }
        } catch let error as MariaDBError where Nonces.isReuse(error) {
            throw IdentityError(.nonceReused, "this nonce was already used; start a new sign-in")
        }
    }

    /// The id of a new row of `table`. A block is reserved on `database`, which commits by itself,
    /// so this may be called inside a transaction on `transactions`.
    func newID(_ table: IDBlocks.Table) throws -> UInt64 {
        try core.ids.next(table, on: database)
    }

    var clock: any WallClock { core.clock }

    /// Records `event` about `userID` in the webhook outbox; runs in the transaction of the change.
    func report(_ event: LifecycleEvent, userID: UInt64, on connection: Connection) throws {
        try core.webhooks.record(event, userID: userID, at: clock.now(), on: connection)
    }

    /// Seconds a session lives without use (the web session cookie's `Max-Age`).
    package var sessionLifetime: Int { core.sessions?.lifetime ?? 0 }

    /// The site's origin as browsers see it; nil when sessions are not configured.
    package var publicURL: String? { core.sessions?.publicURL }

    /// Closes the thread's database connections.
    package func close() {
        database.close()
        transactions.close()
    }

    /// The session settings.
    /// - Throws: `IdentityError(.notConfigured)` in a process started without them.
    func requireSessions() throws -> SessionSettings {
        guard let sessions = core.sessions else { throw IdentityError(.notConfigured, "sessions are not configured on this server") }
        return sessions
    }

    /// Apple's services.
    /// - Throws: `IdentityError(.notConfigured)` in a process started without them.
    func requireApple() throws -> AppleServices {
        guard let apple = core.apple else { throw IdentityError(.notConfigured, "Sign in with Apple is not configured on this server") }
        return apple
    }

    func appleClient(_ apple: AppleServices) -> AppleClient {
        if let client { return client }
        let made = apple.makeClient()
        client = made
        return made
    }
}
