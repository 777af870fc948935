package import Accounts
import AppleID
package import Logging
package import MariaDB

/// What a handler may use while it serves one request on its worker thread.
///
/// Confined to the worker thread (it holds the thread's database connection and Apple client);
/// never shared.
package final class WorkerContext {
    /// This worker thread's own database connection.
    package let database: Connection
    /// The logger, with the worker's metadata.
    package let logger: Logger
    /// The shared Sign in with Apple services; nil when Apple is not configured.
    package let apple: AppleServices?
    /// The app's own sessions and tokens; nil when not configured.
    package let sessions: SessionSettings?
    /// The process's group commit of sync writes, shared by every worker.
    package let syncCommits: SyncGroupCommit
    /// The process's cache of recently synced users, shared by every worker.
    package let syncCache: SyncCache
    /// This thread's client for Apple's endpoints, made on first use.
    private var client: AppleClient?

    package init(
        database: Connection, logger: Logger, apple: AppleServices? = nil, sessions: SessionSettings? = nil,
        syncCommits: SyncGroupCommit = SyncGroupCommit(), syncCache: SyncCache = SyncCache()
    ) {
        self.database = database
        self.syncCommits = syncCommits
        self.syncCache = syncCache
        self.logger = logger
        self.apple = apple
        self.sessions = sessions
    }

    /// This thread's Apple client (its libcurl handle keeps connections to Apple alive).
    func appleClient(_ apple: AppleServices) -> AppleClient {
        if let client { return client }
        let made = apple.makeClient()
        client = made
        return made
    }
}
