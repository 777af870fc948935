import ArgumentParser
import Foundation
import SiwaConfig

#if canImport(Glibc)
    import Glibc
#endif

/// What lets an operator type `sudo siwa admin …` (or `doctor`, `webhooks`, `migrate`, `keys`, ...)
/// on an installed server: a command run as root with no configuration in its environment reads
/// /etc/siwa/siwa.env itself, as the units do, and then gives up root for the service user's rights,
/// so it reads the same files and writes keys the service can read. A configuration already in the
/// environment (the units, the tests, `scripts/run`) is used as it is, and nothing is dropped.
enum OperatorEnvironment {
    /// The configuration file the units read (`EnvironmentFile=`).
    static let file = "/etc/siwa/siwa.env"
    /// The user the units run as.
    static let serviceUser = "siwa"
    /// The units' working directory.
    static let workingDirectory = "/usr/share/siwa"

    /// Adopts /etc/siwa/siwa.env and the service user's rights when run as root without a
    /// configuration; otherwise does nothing. Call before the configuration is read, after opening
    /// any file the caller asked to be written (it is the caller's, not the service's).
    /// - Parameter droppingRoot: false for `siwa restore`, which writes the key files of /etc/siwa
    ///   that only root may create, owned as `siwa setup` makes them (`ownKeyFile`).
    /// - Returns: whether it adopted /etc/siwa/siwa.env.
    @discardableResult
    static func adopt(droppingRoot: Bool = true) throws -> Bool {
        let environment = ProcessInfo.processInfo.environment
        guard geteuid() == 0, environment["SIWA_DB_NAME"] == nil, FileManager.default.fileExists(atPath: file) else { return false }
        let text: String
        do {
            text = try String(contentsOfFile: file, encoding: .utf8)
        } catch {
            throw CommandFailure("cannot read \(file): \(error.localizedDescription)")
        }
        for (name, value) in EnvironmentFile.parse(text) where environment[name] == nil { setenv(name, value, 1) }
        // Who typed the command is known only before the rights change (then every uid is siwa's).
        _ = invokingOperator
        if droppingRoot {
            try dropToServiceUser()
        } else {
            umask(0o027)
            _ = chdir(workingDirectory)
        }
        return true
    }

    /// After `adopt(droppingRoot: false)` adopted the units' configuration: gives a key file (or the access-key directory) written for the service the
    /// ownership `siwa setup` gives it: the service user's for what it writes itself (the
    /// access-token keys and their directory, mode 0700/0600), root's with the service's group,
    /// mode 0640, for the secrets it only reads.
    static func ownKeyFile(_ path: String, serviceOwned: Bool, directory: Bool = false) throws {
        guard let entry = getpwnam(serviceUser) else { return }
        let uid = serviceOwned ? entry.pointee.pw_uid : 0
        guard chown(path, uid, entry.pointee.pw_gid) == 0, chmod(path, directory ? 0o700 : (serviceOwned ? 0o600 : 0o640)) == 0 else {
            throw CommandFailure("cannot give \(path) to \(serviceUser): \(String(cString: strerror(errno)))")
        }
    }

    /// Gives up root for the service user's uid, group and supplementary groups, for good, and
    /// takes the units' working directory and umask.
    private static func dropToServiceUser() throws {
        guard let entry = getpwnam(serviceUser) else {
            throw CommandFailure("no user \(serviceUser): is the siwa package installed? (run as the service user instead)")
        }
        let uid = entry.pointee.pw_uid
        let gid = entry.pointee.pw_gid
        guard initgroups(serviceUser, gid) == 0, setgid(gid) == 0, setuid(uid) == 0 else {
            throw CommandFailure("cannot take the rights of \(serviceUser): \(String(cString: strerror(errno)))")
        }
        guard setuid(0) != 0 else { throw CommandFailure("could regain root after taking the rights of \(serviceUser)") }
        // As the units run (WorkingDirectory=/usr/share/siwa, UMask=0027): relative paths of the
        // configuration, such as the default migrations directory, mean the same.
        umask(0o027)
        _ = chdir(workingDirectory)
    }

    /// The person an audit event names, as the command was started (before `adopt` gave up root
    /// for the service user's rights): the one who ran sudo (`SUDO_USER`), else the login session's
    /// user (`/proc/self/loginuid`, as `getlogin` reads it), with the account the command ran as when
    /// that differs (`alice (as root)`); with neither, that account itself (`root` in a root shell
    /// without a login session), never the service user the command switched to.
    static func operatorName() -> String { invokingOperator }

    /// `operatorName()`, read once, the first time it is asked for: `adopt` asks before it drops root.
    private static let invokingOperator: String = {
        let environment = ProcessInfo.processInfo.environment
        let login = try? String(contentsOfFile: "/proc/self/loginuid", encoding: .utf8)
        return operatorName(
            sudoUser: environment["SUDO_USER"], loginUID: login.flatMap { uid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) },
            effectiveUID: geteuid(), name: OperatorEnvironment.userName)
    }()

    /// The operator's name from what the process was started with: `sudoUser` (sudo's
    /// `SUDO_USER`), `loginUID` (the login session's user; nil or `uid_t.max` without one), the
    /// effective uid, and a way to name a uid. `SUDO_USER` is only an environment variable: one
    /// that is not a user name (1 to 32 of `[A-Za-z0-9._-]`, not starting with `-`) is passed over,
    /// so that no control character or long text reaches the audit log through it. (Whoever may
    /// run `siwa admin` can set it: the audit names the account too, and that account can change
    /// the database anyway.)
    static func operatorName(sudoUser: String?, loginUID: uid_t?, effectiveUID: uid_t, name: (uid_t) -> String?) -> String {
        let account = name(effectiveUID) ?? "uid \(effectiveUID)"
        let person: String? =
            if let sudoUser, isUserName(sudoUser) {
                sudoUser
            } else if let loginUID, loginUID != uid_t.max {
                name(loginUID) ?? "uid \(loginUID)"
            } else {
                nil
            }
        guard let person, person != account else { return account }
        return "\(person) (as \(account))"
    }

    /// Whether `text` has the shape of a user name: 1 to 32 of `[A-Za-z0-9._-]`, not starting with `-`.
    static func isUserName(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && !text.hasPrefix("-")
            && text.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2E
                    || byte == 0x5F || byte == 0x2D
            }
    }

    private static func userName(_ uid: uid_t) -> String? {
        getpwuid(uid).flatMap { String(validatingCString: $0.pointee.pw_name) }
    }
}

/// A file an operator asked a command to write (`-o`): a new file, created at once, mode 0600, in
/// the caller's directory and given to the person who ran sudo, so that every failure is known
/// before any work and names the path, the cause and the fix. An existing file is never
/// overwritten (a root-run command must not truncate or take over a file it was pointed at), and
/// the file is removed again if the command fails.
struct OutputFile {
    /// The absolute path.
    let path: String
    private let descriptor: Int32

    init(creating name: String) throws {
        path = name.hasPrefix("/") ? name : FileManager.default.currentDirectoryPath + "/" + name
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else {
            let cause = String(cString: strerror(errno))
            let fix =
                errno == EEXIST
                ? "an existing file is not overwritten: remove it or name another"
                : "the command runs as \(OperatorEnvironment.operatorName()); name a file in a directory it can write, or leave out -o for standard output"
            throw CommandFailure("cannot write \(path): \(cause) (\(fix))")
        }
        let environment = ProcessInfo.processInfo.environment
        if geteuid() == 0, let uid = environment["SUDO_UID"].flatMap(uid_t.init), let gid = environment["SUDO_GID"].flatMap(gid_t.init),
            fchown(descriptor, uid, gid) != 0
        {
            let cause = String(cString: strerror(errno))
            discard()
            throw CommandFailure("cannot give \(path) to uid \(uid): \(cause)")
        }
    }

    /// Writes `text` and closes the file; on a failure the file is removed.
    func write(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let cause = String(cString: strerror(errno))
                discard()
                throw CommandFailure("cannot write \(path): \(cause)")
            }
            bytes = bytes.dropFirst(written)
        }
        guard fsync(descriptor) == 0, close(descriptor) == 0 else {
            let cause = String(cString: strerror(errno))
            unlink(path)
            throw CommandFailure("cannot write \(path): \(cause)")
        }
    }

    /// Closes and removes the file (the command failed before writing it).
    func discard() {
        close(descriptor)
        unlink(path)
    }
}
