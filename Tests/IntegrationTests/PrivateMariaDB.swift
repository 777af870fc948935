import Foundation
import MariaDB
import Testing

/// A MariaDB server of the test's own, on a unix socket in a temporary directory (scripts/lib.sh's
/// `start_mariadb`), which a test may freeze with SIGSTOP: the shared test server must never be
/// frozen, other tests and people use it. The test connects as the operating system's user, whom
/// `mariadb-install-db` lets in through the socket.
final class PrivateMariaDB {
    let directory: String
    /// The server, without a schema (`TestDatabase(server:)` makes one).
    let configuration: Configuration
    let pid: pid_t

    /// Installs and starts the server: several seconds.
    init() throws {
        directory = NSTemporaryDirectory() + "siwa-db-" + UUID().uuidString.prefix(8).lowercased()
        try PrivateMariaDB.script(#"start_mariadb "$1""#, directory)
        let pidText = try String(contentsOfFile: directory + "/mariadb.pid", encoding: .utf8)
        pid = try #require(pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)))
        let user = String(cString: getpwuid(geteuid()).pointee.pw_name)
        configuration = Configuration(endpoint: .unixSocket(path: directory + "/mysql.sock"), user: user, allowsMultipleStatements: true)
    }

    /// Stops the server's process (SIGSTOP): its socket still accepts connections, nothing answers.
    /// Not a throwing call: the load's threads wait for the freeze, and must be let go.
    func freeze() {
        #expect(kill(pid, SIGSTOP) == 0, "SIGSTOP to \(pid): errno \(errno)")
        // The signal takes effect when the process is next scheduled: until its state reads
        // stopped ("T"), a statement sent now could still be answered.
        while PrivateMariaDB.state(of: pid) != "T" { sched_yield() }
    }

    /// The state letter of process `pid` in /proc (R, S, T, ...), or nil when it is gone.
    private static func state(of pid: pid_t) -> Character? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        return stat[stat.index(after: end)...].first { $0 != " " }
    }

    /// Lets the frozen server run again (SIGCONT).
    func thaw() { kill(pid, SIGCONT) }

    /// Stops the server (thawed first, so that SIGTERM reaches it) and removes its directory.
    func stop() {
        thaw()
        try? PrivateMariaDB.script(#"stop_pidfile "$1/mariadb.pid" 60"#, directory)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `command` with scripts/lib.sh sourced and `argument` as `$1`. Through `posix_spawn` and
    /// `waitpid`: Foundation's `Process.waitUntilExit` never returned here once the script had left
    /// the server running in the background.
    private static func script(_ command: String, _ argument: String) throws {
        let library = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../scripts/lib.sh")
            .standardized.path
        let script = #". "$0"; "# + command
        let words: [String] = ["/bin/bash", "-c", script, library, argument]
        let arguments = words.map { strdup($0) }
        defer { for argument in arguments { free(argument) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/bash", nil, nil, arguments + [nil], environ) == 0 else { throw CocoaError(.executableLoad) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        guard status == 0 else { throw CocoaError(.executableLoad) }
    }
}
