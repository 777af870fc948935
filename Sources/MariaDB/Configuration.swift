/// Where and how to connect to MariaDB. Built by the application from its own configuration.
package struct Configuration: Sendable {
    /// The server address.
    package enum Endpoint: Sendable, Equatable {
        case unixSocket(path: String)
        case tcp(host: String, port: Int)
    }

    package var endpoint: Endpoint
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
        self.endpoint = endpoint
        self.user = user
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.readWriteTimeout = readWriteTimeout
        self.allowsMultipleStatements = allowsMultipleStatements
    }
}
