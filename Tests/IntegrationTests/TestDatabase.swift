import Accounts
import Foundation
import Identity
import MariaDB
import Server

/// Reads a test setting, with a local default (postgres-nio's `env` helper).
func env(_ name: String) -> String? {
    ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 }
}

/// A uniquely named schema on the test server (SIWA_TEST_DB_SOCKET, or SIWA_TEST_DB_HOST/PORT, and
/// SIWA_TEST_DB_USER/PASSWORD), dropped by `drop()`. Without a server the tests fail, on purpose.
/// A suite that needs one per test creates it in `init` and drops it in `deinit`; a single test
/// uses `withDatabase`.
final class TestDatabase {
    let name: String
    let configuration: Configuration
    private let admin: Connection

    /// The test server, without a schema.
    static func serverConfiguration() throws -> Configuration {
        initializeMariaDBLibrary()
        let endpoint: Configuration.Endpoint =
            if let socket = env("SIWA_TEST_DB_SOCKET") {
                .unixSocket(path: socket)
            } else {
                .tcp(host: env("SIWA_TEST_DB_HOST") ?? "127.0.0.1", port: Int(env("SIWA_TEST_DB_PORT") ?? "3306") ?? 3306)
            }
        return Configuration(
            endpoint: endpoint, user: env("SIWA_TEST_DB_USER") ?? "root", password: env("SIWA_TEST_DB_PASSWORD"),
            allowsMultipleStatements: true)
    }

    /// - Parameter server: the server to make the schema on; nil for the test server.
    init(server: Configuration? = nil) throws {
        initializeMariaDBLibrary()
        let server = try server ?? Self.serverConfiguration()
        admin = Connection(configuration: server)
        name = "siwa_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(16).lowercased()
        do {
            try admin.run("CREATE DATABASE `\(raw: name)` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
        } catch {
            admin.close()
            throw error
        }
        var configuration = server
        configuration.database = name
        configuration.allowsMultipleStatements = false
        self.configuration = configuration
    }

    /// A new test schema with the project's own migrations (`sql/`) applied.
    /// - Parameter server: the server to make it on; nil for the test server.
    static func migrated(server: Configuration? = nil) throws -> TestDatabase {
        let database = try TestDatabase(server: server)
        let sql = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../sql").standardized.path
        do {
            let migrating = try database.connect(multipleStatements: true)
            defer { migrating.close() }
            _ = try MigrationRunner(Migrator(directory: sql)).migrate(on: migrating)
        } catch {
            // A failed migration fails the test that asked for it, with the schema dropped and the
            // admin connection closed (a `Connection` must be closed before it goes away).
            database.drop()
            throw error
        }
        return database
    }

    /// A new connection to the test schema.
    func connect(multipleStatements: Bool = false) throws -> Connection {
        var configuration = self.configuration
        configuration.allowsMultipleStatements = multipleStatements
        return Connection(configuration: configuration)
    }

    /// Kills the server-side session of `connection` from another connection, as a restart would.
    func kill(_ connection: Connection) throws {
        try kill(connectionID: try connection.query("SELECT CONNECTION_ID()")[0].decode(at: 0))
    }

    func kill(connectionID id: Int) throws {
        _ = try admin.execute("KILL CONNECTION \(raw: String(id))")
    }

    func drop() {
        try? admin.run("DROP DATABASE IF EXISTS `\(raw: name)`")
        admin.close()
    }
}

/// A suite whose every test gets a new migrated schema and an open connection to it: Swift Testing
/// makes a suite instance per test, and the schema is dropped when that instance goes.
class MigratedSchemaSuite {
    let database: TestDatabase
    let connection: Connection

    init() throws {
        database = try TestDatabase.migrated()
        connection = try database.connect()
    }

    deinit {
        connection.close()
        database.drop()
    }
}

/// Runs `body` on a new, empty test schema and drops the schema when `body` returns or throws.
func withDatabase<T>(_ body: (TestDatabase) throws -> T) throws -> T {
    let database = try TestDatabase()
    defer { database.drop() }
    return try body(database)
}
