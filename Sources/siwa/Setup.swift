import Accounts
import ArgumentParser
import Foundation
import Identity
import JOSE
import MariaDB
import SiwaConfig

#if canImport(Glibc)
    import Glibc
#endif

struct Setup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write /etc/siwa: the configuration, the keys, the database password; create the database; migrate.",
        discussion: """
            Run as root after installing the package. Values come from the options, or are asked for \
            when standard input is a terminal. What exists already (a key, the password, siwa.env, the \
            database) is kept as it is, so running it twice changes nothing. Without --db-admin-socket \
            the SQL that creates the database and its user is printed instead of run. On a host set up \
            already, --domain-association FILE alone adds or replaces Apple's domain-association file and \
            keeps everything else (then: systemctl restart siwa).
            """)

    @Option(help: "The configuration directory.") var configDir = "/etc/siwa"
    @Option(help: "The user the services run as (owner of the keys siwa writes).") var serviceUser = "siwa"
    @Option(help: "The site's origin as browsers see it, https://host.") var publicURL: String?
    @Option(help: "Apple Team ID (10 characters).") var teamID: String?
    @Option(help: "Key ID of the Sign in with Apple key (10 characters).") var keyID: String?
    @Option(help: "The .p8 file downloaded from Apple.") var p8: String?
    @Option(name: .customLong("bundle-ids"), help: "The app's bundle ids, comma-separated.") var bundleIDs: String?
    @Option(help: "The Services ID of the web sign-in.") var servicesID: String?
    @Option(help: "MariaDB's unix socket.") var dbSocket = "/run/mysqld/mysqld.sock"
    @Option(help: "The database name.") var dbName = "siwa"
    @Option(help: "The database user siwa connects as.") var dbUser = "siwa"
    @Option(help: "Create the database and its user through this socket as MariaDB's root (unix-socket authentication).")
    var dbAdminSocket: String?
    @Option(help: "Apple's base URL (only for the Apple ID emulator).") var appleBaseURL: String?
    @Option(name: .customLong("apple-ca-file"), help: "CA file trusted for Apple's base URL (only for the emulator).")
    var appleCAFile: String?
    @Option(
        help: """
            Apple's apple-developer-domain-association.txt, only if Apple's registration of the Services ID asks for one: \
            copied into the configuration directory and served at /.well-known/. Alone, on a host set up already: \
            adds or replaces only that file.
            """)
    var domainAssociation: String?
    @Option(help: "The migrations directory.") var migrationsDir = "/usr/share/siwa/sql"
    @Option(help: "The FastCGI socket nginx connects to.") var socketPath = "/run/siwa/siwa.sock"

    func run() throws {
        if let domainAssociation, isDomainAssociationOnly {
            return try addDomainAssociation(domainAssociation)
        }
        // As given, and before a terminal is asked for the rest (which would be refused after):
        // --domain-association and nothing else, on a host not set up.
        let onlyDomainAssociation = [publicURL, teamID, keyID, p8, bundleIDs, servicesID].allSatisfy { $0 == nil }
        if domainAssociation != nil, onlyDomainAssociation, !FileManager.default.fileExists(atPath: configDir + "/siwa.env") {
            throw ValidationError(
                "refused, nothing written:\n  - --domain-association alone adds the file to a host set up already; "
                    + "\(configDir)/siwa.env does not exist: give the other values too")
        }
        var values = self
        try values.askForMissing()
        let problems = values.shapeProblems()
        guard problems.isEmpty else {
            throw ValidationError("refused, nothing written:\n" + problems.map { "  - \($0)" }.joined(separator: "\n"))
        }
        let owner = try ServiceOwner(name: serviceUser)
        let files = SetupFiles(directory: configDir, owner: owner)
        let firstSetup = !FileManager.default.fileExists(atPath: files.path("siwa.env"))
        let before = files.fingerprint()
        try files.makeDirectory()
        let password = try files.secret("db_password") { hexString(try SecureRandom.bytes(count: 24)) }
        try files.secret("data_keys") { "k1 " + Data(try SecureRandom.bytes(count: 32)).base64EncodedString() }
        try files.accessKeys("access_keys")
        if let p8 = values.p8 { try files.copy(p8, to: "apple.p8") }
        try files.config("siwa.env", values.environment(directory: configDir))
        if let domainAssociation = values.domainAssociation {
            let name = "apple-developer-domain-association.txt"
            try files.replace(name, with: try Data(contentsOf: URL(fileURLWithPath: domainAssociation)), from: domainAssociation)
            try files.addKey("SIWA_DOMAIN_ASSOCIATION_FILE", files.path(name), to: "siwa.env")
        }
        initializeMariaDBLibrary()
        try values.createDatabase(password: password)
        try values.migrate(password: password)
        values.printAppleValues()
        if firstSetup {
            print("Then: systemctl enable --now siwa siwa-jobs; siwa doctor")
        } else if files.fingerprint() != before {
            print("Then: systemctl restart siwa siwa-jobs (they read the configuration and its files when they start); siwa doctor")
        } else {
            print("Nothing in \(configDir) changed; siwa doctor checks the server.")
        }
    }

    /// Only `--domain-association` of the values siwa.env holds, on a host whose siwa.env exists:
    /// the file alone is added or replaced.
    var isDomainAssociationOnly: Bool {
        [publicURL, teamID, keyID, p8, bundleIDs, servicesID, appleBaseURL, appleCAFile].allSatisfy { $0 == nil }
            && FileManager.default.fileExists(atPath: configDir + "/siwa.env")
    }

    /// Adds or replaces Apple's domain-association file of a configured host, checked as a whole
    /// setup checks it, and names it in siwa.env if it does not yet; nothing else is touched.
    func addDomainAssociation(_ source: String) throws {
        let size = FileManager.default.contents(atPath: source)?.count ?? 0
        guard size > 0, size <= DomainAssociation.maximumBytes else {
            throw ValidationError(
                "refused, nothing written:\n  - --domain-association: \(source) is missing, empty or over 64 KiB; expected the file Apple gave"
            )
        }
        let files = SetupFiles(directory: configDir, owner: try ServiceOwner(name: serviceUser))
        let name = "apple-developer-domain-association.txt"
        let environment = try String(contentsOfFile: files.path("siwa.env"), encoding: .utf8)
        let key = "SIWA_DOMAIN_ASSOCIATION_FILE"
        if let named = EnvironmentFile.parse(environment).last(where: { $0.name == key })?.value, named != files.path(name) {
            throw ValidationError(
                """
                refused, nothing written:
                  - \(files.path("siwa.env")) sets \(key)=\(named): replace that file, or remove the line to have setup keep \
                the file in \(configDir)
                """)
        }
        let before = files.fingerprint()
        try files.replace(name, with: try Data(contentsOf: URL(fileURLWithPath: source)), from: source)
        try files.addKey(key, files.path(name), to: "siwa.env")
        if files.fingerprint() == before {
            print("Nothing changed (the file and siwa.env were so already); siwa doctor checks it is served.")
        } else {
            print("Then: systemctl restart siwa (it reads the file when it starts); siwa doctor checks it is served.")
        }
    }

    /// Asks for what is missing, when a person is there to answer.
    mutating func askForMissing() throws {
        guard isatty(STDIN_FILENO) == 1 else { return }
        func ask(_ question: String) -> String? {
            print(question + ": ", terminator: "")
            let answer = readLine()?.trimmingCharacters(in: .whitespaces) ?? ""
            return answer.isEmpty ? nil : answer
        }
        publicURL = publicURL ?? ask("Public URL (https://auth.example.com)")
        teamID = teamID ?? ask("Apple Team ID")
        keyID = keyID ?? ask("Key ID of the Sign in with Apple key")
        p8 = p8 ?? ask("Path of the .p8 key file")
        bundleIDs = bundleIDs ?? ask("Bundle ids, comma-separated (empty for none)")
        servicesID = servicesID ?? ask("Services ID (empty for none)")
    }

    /// Every value of the wrong shape, named.
    func shapeProblems() -> [String] {
        var problems: [String] = []
        let url = publicURL.flatMap(URL.init(string:))
        if url?.scheme != "https" || url?.host == nil || !(url?.path ?? "").isEmpty {
            problems.append("--public-url: expected https://host[:port] without a path")
        }
        for (name, value) in [("--team-id", teamID), ("--key-id", keyID)] {
            if let value, value.count == 10, value.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) { continue }
            problems.append("\(name): expected the 10 characters A-Z and 0-9 that Apple shows")
        }
        if let p8 {
            if (try? P256PrivateKey(pem: String(contentsOfFile: p8, encoding: .utf8))) == nil {
                problems.append("--p8: \(p8) is not the P-256 private key in PEM that Apple lets you download (AuthKey_<Key ID>.p8)")
            }
        } else {
            problems.append("--p8: required")
        }
        if let domainAssociation {
            let size = FileManager.default.contents(atPath: domainAssociation)?.count ?? 0
            if size == 0 || size > DomainAssociation.maximumBytes {
                problems.append("--domain-association: \(domainAssociation) is missing, empty or over 64 KiB; expected the file Apple gave")
            }
        }
        let ids = clientIDs
        if ids.isEmpty { problems.append("--bundle-ids or --services-id: at least one client id") }
        for id in ids where !id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) || !id.contains(".") {
            problems.append("\(id): expected a reverse-DNS id such as com.example.app")
        }
        return problems
    }

    var bundleIDList: [String] {
        (bundleIDs ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    var clientIDs: [String] { bundleIDList + (servicesID.map { [$0] } ?? []) }

    /// The lines of siwa.env.
    func environment(directory: String) -> String {
        var lines = [
            "# Written by siwa setup; see /etc/siwa/siwa.env.example for every key.",
            "SIWA_SOCKET_PATH=\(socketPath)", "SIWA_DB_SOCKET=\(dbSocket)", "SIWA_DB_NAME=\(dbName)", "SIWA_DB_USER=\(dbUser)",
            "SIWA_DB_PASSWORD_FILE=\(directory)/db_password", "SIWA_MIGRATIONS_DIR=\(migrationsDir)",
            "SIWA_PUBLIC_URL=\(publicURL ?? "")", "SIWA_ACCESS_KEYS_DIR=\(directory)/access_keys",
            "SIWA_DATA_KEYS_FILE=\(directory)/data_keys", "SIWA_APPLE_TEAM_ID=\(teamID ?? "")", "SIWA_APPLE_KEY_ID=\(keyID ?? "")",
            "SIWA_APPLE_PRIVATE_KEY_FILE=\(directory)/apple.p8",
        ]
        if !bundleIDList.isEmpty { lines.append("SIWA_APPLE_BUNDLE_IDS=\(bundleIDList.joined(separator: ","))") }
        if let servicesID { lines.append("SIWA_APPLE_SERVICES_ID=\(servicesID)") }
        if let appleBaseURL { lines.append("SIWA_APPLE_BASE_URL=\(appleBaseURL)") }
        if let appleCAFile { lines.append("SIWA_APPLE_CA_FILE=\(appleCAFile)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The statements that create the database and its user: names and a password, which these
    /// statements cannot bind, spliced into the text (the password with its quotes doubled).
    func databaseSQL(password: String) -> [SQL] {
        let quoted = password.replacingOccurrences(of: "'", with: "''")
        return [
            "CREATE DATABASE IF NOT EXISTS `\(raw: dbName)` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
            "CREATE USER IF NOT EXISTS '\(raw: dbUser)'@'localhost' IDENTIFIED BY '\(raw: quoted)'",
            "GRANT ALL PRIVILEGES ON `\(raw: dbName)`.* TO '\(raw: dbUser)'@'localhost'",
        ]
    }

    func createDatabase(password: String) throws {
        guard let dbAdminSocket else {
            print("database: run as MariaDB's root (then siwa setup again, or siwa migrate):")
            for statement in databaseSQL(password: "<the contents of \(configDir)/db_password>") { print("  \(statement);") }
            return
        }
        let admin = Connection(configuration: Configuration(endpoint: .unixSocket(path: dbAdminSocket), user: "root"))
        defer { admin.close() }
        for statement in databaseSQL(password: password) { try admin.run(statement) }
        print("database: \(dbName) and its user \(dbUser)@localhost exist")
    }

    func migrate(password: String) throws {
        let configuration = Configuration(
            endpoint: .unixSocket(path: dbSocket), user: dbUser, password: password, database: dbName, allowsMultipleStatements: true)
        let connection = Connection(configuration: configuration)
        defer { connection.close() }
        do {
            let migrator = try Migrator(directory: migrationsDir)
            let done = try MigrationRunner(migrator).migrate(on: connection) { _ in }
            print("migrations: \(done.isEmpty ? "up to date" : "applied \(done.count)") (\(migrator.migrations.count) in all)")
        } catch let error as MariaDBError where dbAdminSocket == nil {
            print("migrations: not yet (\(error)); `siwa migrate` once the database exists")
        }
    }

    func printAppleValues() {
        let origin = publicURL ?? ""
        let host = URL(string: origin)?.host ?? ""
        print(
            """

            At Apple (Certificates, Identifiers & Profiles):
              Services ID \(servicesID ?? "(none)"): domain \(host), return URL \(origin)/auth/callback
              server-to-server notification endpoint: \(origin)/webhook/apple
            """)
    }
}

/// The user and group that own what setup writes for the services.
struct ServiceOwner {
    let uid: uid_t
    let gid: gid_t

    init(name: String) throws {
        guard let entry = getpwnam(name) else {
            throw ValidationError("no user \(name): install the package (it creates it), or pass --service-user")
        }
        uid = entry.pointee.pw_uid
        gid = entry.pointee.pw_gid
    }
}

/// The files of the configuration directory, each written only when it does not exist yet.
struct SetupFiles {
    let directory: String
    let owner: ServiceOwner

    func path(_ name: String) -> String { directory + "/" + name }

    /// Writes `path` with `mode`, owned by root (or the caller) and the service's group.
    private func write(_ text: String, to path: String, mode: mode_t) throws {
        try write(Data(text.utf8), to: path, mode: mode)
    }

    private func write(_ data: Data, to path: String, mode: mode_t) throws {
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: mode]) else {
            throw ValidationError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        _ = chown(path, geteuid(), owner.gid)
    }

    /// Writes `name` with `data` (root and the service's group, 0640) unless it holds that already:
    /// a file the operator may be given again, such as Apple's domain-association file.
    func replace(_ name: String, with data: Data, from source: String) throws {
        let file = path(name)
        if FileManager.default.contents(atPath: file) == data {
            print("\(file): kept")
            return
        }
        try write(data, to: file, mode: 0o640)
        print("\(file): copied from \(source)")
    }

    /// Adds `key=value` to the configuration file `name` unless it sets `key` already.
    func addKey(_ key: String, _ value: String, to name: String) throws {
        let file = path(name)
        let text = try String(contentsOfFile: file, encoding: .utf8)
        guard !text.split(separator: "\n").contains(where: { $0.hasPrefix(key + "=") }) else { return }
        try write(text + (text.hasSuffix("\n") || text.isEmpty ? "" : "\n") + "\(key)=\(value)\n", to: file, mode: 0o640)
        print("\(file): \(key) added")
    }

    /// Each file under the directory with its contents (a few small files): what a run changed. A
    /// size and modification time missed a file replaced by one of the same size within the
    /// file system's timestamp tick.
    func fingerprint() -> [String: Data] {
        var files: [String: Data] = [:]
        for name in FileManager.default.subpaths(atPath: directory) ?? [] {
            guard let contents = FileManager.default.contents(atPath: path(name)) else { continue }
            files[name] = contents
        }
        return files
    }

    func makeDirectory() throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o750])
    }

    /// A secret readable by the service's group; made by `make` when absent. Returns its contents.
    @discardableResult
    func secret(_ name: String, make: () throws -> String) throws -> String {
        let file = path(name)
        if let existing = try? String(contentsOfFile: file, encoding: .utf8) {
            print("\(file): kept")
            return existing.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let value = try make()
        try write(value + "\n", to: file, mode: 0o640)
        print("\(file): written")
        return value
    }

    /// The access-token key directory, owned by the service user, with one key when empty.
    func accessKeys(_ name: String) throws {
        let keys = path(name)
        try FileManager.default.createDirectory(atPath: keys, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if (try? AccessTokenKeyFiles.load(keys))?.isEmpty == false {
            print("\(keys): kept")
            return
        }
        let keyID = try AccessTokenKeyFiles.add(.es256, to: keys, now: Date())
        for file in [keys, keys + "/" + keyID + ".pem"] { _ = chown(file, owner.uid, owner.gid) }
        print("\(keys): key \(keyID) written")
    }

    func copy(_ source: String, to name: String) throws {
        try writeOnce(name, String(contentsOfFile: source, encoding: .utf8), written: "copied from \(source)")
    }

    func config(_ name: String, _ text: String) throws {
        try writeOnce(name, text, kept: "kept (remove it to have it written again)")
    }

    /// Writes `name` (root and the service's group, 0640) unless it exists.
    private func writeOnce(_ name: String, _ text: @autoclosure () throws -> String, kept: String = "kept", written: String = "written")
        throws
    {
        let file = path(name)
        if FileManager.default.fileExists(atPath: file) {
            print("\(file): \(kept)")
            return
        }
        try write(try text(), to: file, mode: 0o640)
        print("\(file): \(written)")
    }
}
