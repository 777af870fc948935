/// The MariaDB connections a siwa process holds at most, by what it runs: what `siwa doctor` checks
/// against the server's `max_connections` (docs/OPERATIONS.md, "Database connections").
package enum DatabaseConnections {
    /// `siwa serve`: two per worker thread (one with autocommit for single statements, one for
    /// transactions), the sync committers', the session cache poller's, and the cluster node
    /// checker's (one per node, with several nodes).
    /// - Parameters:
    ///   - workerThreads: `SIWA_WORKER_THREADS`.
    ///   - databaseNodes: the servers of `SIWA_DB_HOST` (1 for a socket or a single host).
    /// - Returns: the connections.
    package static func serve(workerThreads: Int, databaseNodes: Int) -> Int {
        2 * workerThreads + SyncCommitter.committers + 1 + nodeChecker(databaseNodes)
    }

    /// `siwa jobs`: its own, the validation lanes' (while a backlog of Apple's tokens is checked),
    /// each webhook endpoint's senders while it delivers, and the cluster node checker's.
    /// - Parameters:
    ///   - webhookEndpoints: the endpoints of `SIWA_WEBHOOK_URLS`.
    ///   - validationLanes: `SIWA_APPLE_VALIDATION_LANES`.
    ///   - databaseNodes: the servers of `SIWA_DB_HOST`.
    /// - Returns: the connections.
    package static func jobs(
        webhookEndpoints: Int, validationLanes: Int, databaseNodes: Int
    ) -> Int {
        1 + validationLanes + webhookEndpoints * WebhookSender.defaultConcurrency + nodeChecker(databaseNodes)
    }

    /// What the node checker holds: a connection per node while one is behind, none for one server.
    static func nodeChecker(_ nodes: Int) -> Int { nodes > 1 ? nodes : 0 }
}
