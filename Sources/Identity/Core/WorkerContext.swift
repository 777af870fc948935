import Accounts
import AppleID
package import Logging
package import MariaDB

/// What one worker thread's use cases run on: the process's shared `IdentityCore`, this thread's
/// two database connections and its Apple client, and its logger. Confined to the thread that
/// made it; never shared. Each feature's use cases (`SignInUseCases`, `SessionUseCases`, ...) are
/// a view of it.
package final class WorkerContext {
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
    /// - Parameter queued: how long the request already waited for this thread, taken off the
    ///   budget: while every thread waits for a database that stopped answering, the requests
    ///   behind them wait in the socket's queue, and would otherwise wait for it again in full.
    package func perform<T>(queued: Duration = .zero, _ body: () throws -> T) throws -> T {
        do {
            let budget = Duration.seconds(database.configuration.readWriteTimeout) - queued
            return try DatabaseBudget.run(max(budget, .zero), body)
        } catch let error as MariaDBError where error.code == .connectionLost {
            throw IdentityError(.databaseUnavailable, error.description)
        }
    }

    /// Runs `body` in one transaction on `transactions`, which it is given: committed when `body`
    /// returns, rolled back when it throws. (A sign-in that claims its nonce in it runs it inside
    /// `NonceClaim.refusingReuse`.)
    /// - Throws: what `body` throws.
    func transaction<T>(_ body: (Connection) throws -> T) throws -> T {
        try transactions.transaction { try body(transactions) }
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

/// A feature's use cases, run on one worker thread's `WorkerContext`: what every feature's
/// operations reach through it.
package protocol UseCase {
    var context: WorkerContext { get }
}

extension UseCase {
    var core: IdentityCore { context.core }
    var database: Connection { context.database }
    var logger: Logger { context.logger }
    var clock: any WallClock { context.clock }

    func transaction<T>(_ body: (Connection) throws -> T) throws -> T { try context.transaction(body) }
    func newID(_ table: IDBlocks.Table) throws -> UInt64 { try context.newID(table) }
    func report(_ event: LifecycleEvent, userID: UInt64, on connection: Connection) throws {
        try context.report(event, userID: userID, on: connection)
    }
    func requireSessions() throws -> SessionSettings { try context.requireSessions() }
    func requireApple() throws -> AppleServices { try context.requireApple() }
    func appleClient(_ apple: AppleServices) -> AppleClient { context.appleClient(apple) }
}

/// The use cases a worker thread serves the HTTP contract with, one value per feature, all on the
/// thread's one `WorkerContext`.
package struct UseCases {
    package let context: WorkerContext
    package let signIn: SignInUseCases
    package let sessions: SessionUseCases
    package let account: AccountUseCases
    package let sync: SyncUseCases
    package let appleNotifications: AppleNotificationUseCases
    package let status: StatusUseCases

    package init(context: WorkerContext) {
        self.context = context
        signIn = SignInUseCases(context: context)
        sessions = SessionUseCases(context: context)
        account = AccountUseCases(context: context)
        sync = SyncUseCases(context: context)
        appleNotifications = AppleNotificationUseCases(context: context)
        status = StatusUseCases(context: context)
    }
}
