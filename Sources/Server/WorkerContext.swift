package import Logging
package import MariaDB

/// What a handler may use while it serves one request on its worker thread.
///
/// Confined to the worker thread (it holds the thread's database connection); never shared.
package final class WorkerContext {
    /// This worker thread's own database connection.
    package let database: Connection
    /// The logger, with the worker's metadata.
    package let logger: Logger
    /// The shared Sign in with Apple services; nil when Apple is not configured.
    package let apple: AppleServices?

    package init(database: Connection, logger: Logger, apple: AppleServices? = nil) {
        self.database = database
        self.logger = logger
        self.apple = apple
    }
}
