import Foundation
import MariaDB

#if canImport(Glibc)
    import Glibc
#endif

/// MariaDB's client programs as `siwa backup` and `siwa restore` run them (`mariadb-dump`,
/// `mariadb`), connected as the configuration says (or as root over an admin socket): the
/// password goes in an option file of a private temporary directory, never on a command line
/// that `ps` shows, and the directory is removed by `close()`.
struct MariaDBClientTools {
    private let directory: String
    private let optionFile: String

    /// Writes the option file for `database`'s first server, or for MariaDB's root over
    /// `adminSocket` (socket authentication, as `siwa setup --db-admin-socket`).
    init(database: MariaDB.Configuration, adminSocket: String?) throws {
        var template = Array(((ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp") + "/siwa-client-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw CommandFailure("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        optionFile = directory + "/client.cnf"
        func quoted(_ value: String) -> String {
            "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var lines = ["[client]"]
        if let adminSocket {
            lines += ["user=root", "socket=\(quoted(adminSocket))"]
        } else {
            lines.append("user=\(quoted(database.user))")
            if let password = database.password { lines.append("password=\(quoted(password))") }
            switch database.endpoint {
            case .unixSocket(let path): lines.append("socket=\(quoted(path))")
            case .tcp(let host, let port): lines += ["host=\(quoted(host))", "port=\(port)", "protocol=TCP"]
            }
        }
        let descriptor = open(optionFile, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw CommandFailure("cannot write \(optionFile): \(String(cString: strerror(errno)))") }
        let text = Array((lines.joined(separator: "\n") + "\n").utf8)
        let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        Glibc.close(descriptor)
        guard written == text.count else { throw CommandFailure("cannot write \(optionFile)") }
    }

    /// Removes the option file and its directory.
    func close() {
        unlink(optionFile)
        rmdir(directory)
    }

    /// The path of `tool` on PATH.
    /// - Throws: naming the package that brings it.
    static func find(_ tool: String) throws -> String {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") where FileManager.default.isExecutableFile(atPath: "\(directory)/\(tool)") {
            return "\(directory)/\(tool)"
        }
        throw ToolFailure(status: 69, "\(tool) not found on PATH: install it (apt install mariadb-client)")
    }

    /// `tool --version`, as it prints it, without the trailing newline.
    static func version(of tool: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try find(tool))
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `tool` with the option file and `arguments`, standard input from the file `input`
    /// and standard output to `output` (both optional); throws with its standard error when it
    /// fails.
    func run(_ tool: String, _ arguments: [String], input: String? = nil, output: String? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try Self.find(tool))
        // The option file first: the programs read --defaults-extra-file only in that place.
        process.arguments = ["--defaults-extra-file=\(optionFile)"] + arguments
        let errors = directory + "/stderr"
        _ = FileManager.default.createFile(atPath: errors, contents: nil, attributes: [.posixPermissions: 0o600])
        defer { unlink(errors) }
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        if let input {
            guard let handle = FileHandle(forReadingAtPath: input) else { throw CommandFailure("cannot read \(input)") }
            process.standardInput = handle
        }
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil, attributes: [.posixPermissions: 0o600]),
                let handle = FileHandle(forWritingAtPath: output)
            else { throw CommandFailure("cannot write \(output)") }
            process.standardOutput = handle
        }
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw ToolFailure(
                status: 69,
                "\(tool) failed (exit status \(process.terminationStatus)): \(message.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }
}

/// A failure with its own exit status: a MariaDB client program that failed or is missing (69,
/// EX_UNAVAILABLE), or a backup problem (`BackupError`'s codes as `exitStatus` maps them).
struct ToolFailure: Error, CustomStringConvertible {
    let status: Int32
    let description: String

    init(status: Int32, _ description: String) {
        self.status = status
        self.description = description
    }
}
