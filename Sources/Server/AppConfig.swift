import Foundation
package import Logging
package import MariaDB

#if canImport(Glibc)
import Glibc
#endif

/// Every problem found in the configuration, reported together at start.
package struct ConfigurationError: Error, CustomStringConvertible {
    /// One line per invalid or missing key.
    package let problems: [String]

    package var description: String {
        "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// The whole configuration of `siwa`, read once at start from `SIWA_*` environment variables.
///
/// Libraries receive the typed parts of it (`MariaDB.Configuration`, ...) and never read the
/// environment. Each key is documented in the README table; `AppConfig.keys` is the same list.
package struct AppConfig: Sendable {
    /// The unix socket nginx connects to.
    package var socketPath: String
    /// Permissions of the socket file.
    package var socketMode: UInt32
    /// Listen backlog: connections waiting for a free worker.
    package var socketBacklog: Int32
    /// Worker threads, each with its own database connection.
    package var workerThreads: Int
    /// Hard limit on any request body, in bytes.
    package var maxBodyBytes: Int
    /// The database connection settings.
    package var database: MariaDB.Configuration
    /// The log level.
    package var logLevel: Logger.Level
    /// Directory with the `NNNN_name.sql` migration files.
    package var migrationsDirectory: String

    /// One documented configuration key.
    package struct Key: Sendable {
        package let name: String
        package let type: String
        package let defaultValue: String?
        package let summary: String
        package var isSecret: Bool { name.hasSuffix("_FILE") }
    }

    /// Every key `siwa` reads. The README table lists the same keys.
    package static let keys: [Key] = [
        Key(name: "SIWA_SOCKET_PATH", type: "path", defaultValue: "/run/siwa/siwa.sock", summary: "FastCGI unix socket nginx connects to"),
        Key(name: "SIWA_SOCKET_MODE", type: "octal", defaultValue: "0660", summary: "permissions of the socket file"),
        Key(name: "SIWA_SOCKET_BACKLOG", type: "int 16...65535", defaultValue: "1024", summary: "listen backlog (connections waiting for a free worker)"),
        Key(name: "SIWA_WORKER_THREADS", type: "int 1...512", defaultValue: "16", summary: "worker threads, one database connection each"),
        Key(name: "SIWA_MAX_BODY_BYTES", type: "int 1024...16777216", defaultValue: "1048576", summary: "hard limit on a request body (413 above)"),
        Key(name: "SIWA_DB_SOCKET", type: "path", defaultValue: nil, summary: "MariaDB unix socket (or SIWA_DB_HOST)"),
        Key(name: "SIWA_DB_HOST", type: "host", defaultValue: nil, summary: "MariaDB TCP host (or SIWA_DB_SOCKET)"),
        Key(name: "SIWA_DB_PORT", type: "int 1...65535", defaultValue: "3306", summary: "MariaDB TCP port"),
        Key(name: "SIWA_DB_NAME", type: "string", defaultValue: nil, summary: "database (schema) name"),
        Key(name: "SIWA_DB_USER", type: "string", defaultValue: nil, summary: "database user"),
        Key(name: "SIWA_DB_PASSWORD_FILE", type: "path", defaultValue: "(none)", summary: "file holding the database password"),
        Key(name: "SIWA_DB_CONNECT_TIMEOUT", type: "seconds 1...60", defaultValue: "2", summary: "connect timeout"),
        Key(name: "SIWA_DB_TIMEOUT", type: "seconds 1...3600", defaultValue: "10", summary: "read and write timeout on an open connection"),
        Key(name: "SIWA_LOG_LEVEL", type: "trace|debug|info|notice|warning|error|critical", defaultValue: "info", summary: "log level (logs go to standard error)"),
        Key(name: "SIWA_MIGRATIONS_DIR", type: "path", defaultValue: "sql", summary: "directory of the NNNN_name.sql migrations"),
    ]

    /// Reads and validates the configuration.
    /// - Parameter environment: the process environment (only `SIWA_*` keys are looked at).
    /// - Throws: `ConfigurationError` naming every missing, invalid or unknown key at once.
    package init(environment: [String: String]) throws {
        var reader = EnvironmentReader(environment: environment)
        socketPath = reader.string("SIWA_SOCKET_PATH")
        socketMode = reader.octal("SIWA_SOCKET_MODE")
        socketBacklog = Int32(reader.integer("SIWA_SOCKET_BACKLOG", in: 16...65535))
        workerThreads = reader.integer("SIWA_WORKER_THREADS", in: 1...512)
        maxBodyBytes = reader.integer("SIWA_MAX_BODY_BYTES", in: 1024...16_777_216)
        logLevel = reader.logLevel("SIWA_LOG_LEVEL")
        migrationsDirectory = reader.string("SIWA_MIGRATIONS_DIR")

        let socket = reader.optionalString("SIWA_DB_SOCKET")
        let host = reader.optionalString("SIWA_DB_HOST")
        let port = reader.integer("SIWA_DB_PORT", in: 1...65535)
        let endpoint: MariaDB.Configuration.Endpoint
        switch (socket, host) {
        case (let socket?, nil): endpoint = .unixSocket(path: socket)
        case (nil, let host?): endpoint = .tcp(host: host, port: port)
        case (.some, .some):
            reader.problem("SIWA_DB_SOCKET and SIWA_DB_HOST: set only one of them")
            endpoint = .unixSocket(path: "")
        case (nil, nil):
            reader.problem("SIWA_DB_SOCKET or SIWA_DB_HOST: one of them is required")
            endpoint = .unixSocket(path: "")
        }
        database = MariaDB.Configuration(
            endpoint: endpoint,
            user: reader.required("SIWA_DB_USER"),
            password: reader.secret("SIWA_DB_PASSWORD_FILE")?.value,
            database: reader.required("SIWA_DB_NAME"),
            connectTimeout: reader.integer("SIWA_DB_CONNECT_TIMEOUT", in: 1...60),
            readWriteTimeout: reader.integer("SIWA_DB_TIMEOUT", in: 1...3600)
        )
        reader.rejectUnknownKeys()
        if !reader.problems.isEmpty { throw ConfigurationError(problems: reader.problems) }
    }

    /// The configuration as `KEY=value` lines, secrets redacted (for `siwa config`).
    package func redactedSummary(environment: [String: String]) -> String {
        AppConfig.keys.map { key in
            let value = environment[key.name] ?? key.defaultValue ?? ""
            return "\(key.name)=\(key.isSecret && environment[key.name] != nil ? "\(value) (contents <redacted>)" : value)"
        }.joined(separator: "\n")
    }
}

/// Reads typed values from the environment, collecting problems instead of stopping at the first.
private struct EnvironmentReader {
    let environment: [String: String]
    var problems: [String] = []

    init(environment: [String: String]) { self.environment = environment }

    mutating func problem(_ text: String) { problems.append(text) }

    private func raw(_ name: String) -> String? {
        if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return value }
        return AppConfig.keys.first { $0.name == name }?.defaultValue
    }

    func optionalString(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    func string(_ name: String) -> String { raw(name) ?? "" }

    mutating func required(_ name: String) -> String {
        guard let value = optionalString(name) else {
            problem("\(name): required")
            return ""
        }
        return value
    }

    mutating func integer(_ name: String, in range: ClosedRange<Int>) -> Int {
        guard let text = raw(name), let value = Int(text), range.contains(value) else {
            problem("\(name): expected an integer in \(range.lowerBound)...\(range.upperBound), got \"\(raw(name) ?? "")\"")
            return range.lowerBound
        }
        return value
    }

    mutating func octal(_ name: String) -> UInt32 {
        guard let text = raw(name), let value = UInt32(text, radix: 8), value <= 0o777 else {
            problem("\(name): expected octal permissions such as 0660, got \"\(raw(name) ?? "")\"")
            return 0o600
        }
        return value
    }

    mutating func logLevel(_ name: String) -> Logger.Level {
        guard let text = raw(name), let level = Logger.Level(rawValue: text.lowercased()) else {
            problem("\(name): expected trace, debug, info, notice, warning, error or critical")
            return .info
        }
        return level
    }

    /// Reads the secret from the file named by `name`; the file must not be readable by others.
    mutating func secret(_ name: String) -> Secret? {
        guard let path = optionalString(name) else { return nil }
        var status = stat()
        guard stat(path, &status) == 0 else {
            problem("\(name): cannot read \(path)")
            return nil
        }
        guard status.st_mode & 0o007 == 0 else {
            problem("\(name): \(path) is readable by other users; chmod 0600 or 0640 it")
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            problem("\(name): cannot read \(path)")
            return nil
        }
        // A trailing newline from `echo secret > file` is not part of the secret.
        var text = String(decoding: data, as: UTF8.self)
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        return Secret(text)
    }

    /// A misspelt key would otherwise be silently ignored.
    mutating func rejectUnknownKeys() {
        let known = Set(AppConfig.keys.map(\.name))
        for name in environment.keys.sorted() where name.hasPrefix("SIWA_") && !name.hasPrefix("SIWA_TEST_") {
            if !known.contains(name) { problem("\(name): unknown key") }
        }
    }
}
