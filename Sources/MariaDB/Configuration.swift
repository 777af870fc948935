/// Where and how to connect to MariaDB. Built by the application from its own configuration.
package struct Configuration: Sendable {
    /// The server address.
    package enum Endpoint: Sendable, Equatable, CustomStringConvertible {
        case unixSocket(path: String)
        case tcp(host: String, port: Int)

        /// `host:port`, or the socket's path.
        package var description: String {
            switch self {
            case .unixSocket(let path): path
            case .tcp(let host, let port): "\(host):\(port)"
            }
        }
    }

    /// The server address; the first of `endpoints`.
    package var endpoint: Endpoint {
        get { endpoints[0] }
        set { endpoints = [newValue] + endpoints.dropFirst() }
    }
    /// The servers to use, in order of preference (the nodes of a Galera cluster): a connection
    /// goes to the first that accepts it and, once its server is lost or not ready, to the next.
    package var endpoints: [Endpoint]
    /// `wsrep_sync_wait` of every session (0: off). On a Galera cluster, 15 makes every statement
    /// (reads, updates, inserts) wait until the node has applied what the cluster committed before
    /// it. With 1 (reads only), 50_galera.sh lost one of 50 concurrent syncs of one user answered 200
    /// through two nodes, and sessions just opened on another node were not found: a write that ran
    /// on a node's stale rows.
    package var syncWait = 0
    /// For several endpoints (a Galera cluster): the process's view of the nodes, which brings a
    /// connection back to its first node once that node is synced again (`ClusterNodes`). Shared
    /// by every connection made from this configuration; whoever made it stops it. Long-running
    /// processes set it (`watchNodes()`); without it a connection stays where it failed over to.
    package var nodes: ClusterNodes?

    /// Sets `nodes` when this configuration lists several servers, and returns them (nil for one
    /// server): stop them once every connection made from it is closed.
    package mutating func watchNodes() -> ClusterNodes? {
        guard endpoints.count > 1 else { return nil }
        nodes = ClusterNodes(configuration: self)
        return nodes
    }
    package var user: String
    package var password: String?
    package var database: String?
    /// Seconds to wait for a connection.
    package var connectTimeout: Int
    /// Seconds to wait for a read or a write on an open connection.
    package var readWriteTimeout: Int
    /// Allows several statements in one `run(_:)` call (migrations only).
    package var allowsMultipleStatements: Bool
    /// Whether each statement outside a transaction commits by itself. When false, the connection
    /// only runs statements inside `transaction`, whose first statement starts it: one round trip
    /// less per transaction (no `START TRANSACTION`).
    package var autocommit = true

    package init(
        endpoint: Endpoint, user: String, password: String? = nil, database: String? = nil,
        connectTimeout: Int = 2, readWriteTimeout: Int = 30, allowsMultipleStatements: Bool = false
    ) {
        self.endpoints = [endpoint]
        self.user = user
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.readWriteTimeout = readWriteTimeout
        self.allowsMultipleStatements = allowsMultipleStatements
    }
}
