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

/// `siwa backup DIR`: the database, consistent at one instant, with the key material it cannot be
/// used without, and a manifest to check and restore them by (docs/OPERATIONS.md, "Backup and
/// restore").
struct Backup: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Back up the database and the key material it cannot be used without into a new directory.",
        discussion: """
            DIR gets database.sql (mariadb-dump --single-transaction: one consistent snapshot, taken without \
            stopping siwa; with --master-data=2 --gtid when the server writes a binary log, so the dump names the \
            log position of its snapshot), keys.siwa (the files of SIWA_DATA_KEYS_FILE, SIWA_ACCESS_KEYS_DIR, \
            SIWA_LINK_SECRET_FILE, SIWA_WEBHOOK_SECRET_FILE and SIWA_APPLE_PRIVATE_KEY_FILE that are configured) and \
            manifest.json (the versions, the schema's migration, the binary log position, each file's SHA-256, the \
            data key ids that seal the stored Apple tokens and a few sealed tokens to prove a restored key by). \
            The key material is sealed with the passphrase of --passphrase-file (AES-256-GCM under a PBKDF2-HMAC-SHA256 \
            key), or written in the clear with --unencrypted-keys, or left out with --without-keys. \
            The database holds Apple's refresh tokens sealed with the data key: a copy of database.sql together \
            with the data key in the clear is a copy of those tokens. Keep keys.siwa and the passphrase apart from \
            database.sql, and DIR readable by its owner only (siwa creates it mode 0700, its files 0600). \
            Exit status: 0 done; 64 wrong options; 73 DIR is not new or empty; 69 mariadb-dump failed or is missing; \
            78 the configuration is invalid; 1 anything else (the database, a key file that cannot be read).
            """)

    @Argument(help: "The backup directory: new, or empty; created mode 0700.")
    var directory: String

    @Option(help: "A file whose first line is the passphrase that seals the key material.")
    var passphraseFile: String?

    @Flag(help: "Write the key material in the clear (protect DIR yourself).")
    var unencryptedKeys = false

    @Flag(help: "Leave the key material out (you keep it elsewhere); the backup holds the database only.")
    var withoutKeys = false

    @Option(
        help: """
            Run mariadb-dump as MariaDB's root over this unix socket (socket authentication) instead of the configured \
            user, who lacks the RELOAD and BINLOG MONITOR privileges that the binary log position needs.
            """)
    var dbAdminSocket: String?

    func validate() throws {
        guard [passphraseFile != nil, unencryptedKeys, withoutKeys].filter({ $0 }).count == 1 else {
            throw ValidationError("give one of --passphrase-file FILE, --unencrypted-keys or --without-keys")
        }
    }

    func run() throws {
        // The caller's paths, before a `sudo siwa` takes the service user's rights and directory.
        let target = absolutePath(directory)
        let passphrase = try passphraseFile.map { try readPassphrase(absolutePath($0)) }
        let config = try loadConfiguration()
        let locations = KeyMaterialLocations(environment: ProcessInfo.processInfo.environment)
        try reportingFailures {
            let created = try prepareDirectory(target)
            do {
                try backUp(into: target, config: config, locations: locations, passphrase: passphrase)
            } catch {
                // Nothing half-written stays behind: the files this run made go, and the directory if it made it.
                for name in [BackupManifest.databaseFile, BackupManifest.keysFile, BackupManifest.fileName] { unlink(target + "/" + name) }
                if created { rmdir(target) }
                throw error
            }
        }
    }

    private func backUp(into target: String, config: AppConfig, locations: KeyMaterialLocations, passphrase: [UInt8]?) throws {
        initializeMariaDBLibrary()
        // Counting a large table takes longer than a request's SIWA_DB_TIMEOUT.
        var database = config.database
        database.readWriteTimeout = MigrationRunner.migrationReadTimeout
        let connection = Connection(configuration: database)
        defer { connection.close() }
        let migrator = try Migrator(directory: config.migrationsDirectory)
        let schemaVersion = try migrator.applied(on: connection).keys.max() ?? 0
        let binaryLog = try BackupStatements.writesBinaryLog(on: connection)
        let serverVersion = try BackupStatements.serverVersion(on: connection)
        let sealedCounts = try BackupStatements.sealedTokenCounts(on: connection)
        let samples = try DataKeyCheck.samples(of: sealedCounts, on: connection)
        let rowCounts = try BackupStatements.rowCounts(on: connection)
        let bundle = withoutKeys ? nil : try Self.keyBundle(locations)

        let dumpPath = target + "/" + BackupManifest.databaseFile
        let tools = try MariaDBClientTools(database: config.database, adminSocket: dbAdminSocket)
        defer { tools.close() }
        // Made first, mode 0600: mariadb-dump's --result-file keeps the mode of a file that exists.
        try writeFile(dumpPath, [], mode: 0o600)
        let started = Date()
        try tools.run(
            "mariadb-dump",
            [
                "--single-transaction", "--quick", "--routines", "--triggers", "--hex-blob", "--no-tablespaces",
                "--default-character-set=utf8mb4", "--skip-dump-date",
            ] + (binaryLog ? ["--master-data=2", "--gtid"] : []) + ["--result-file=\(dumpPath)", config.database.database ?? ""])
        let dumpSeconds = Date().timeIntervalSince(started)
        guard try migrator.applied(on: connection).keys.max() ?? 0 == schemaVersion else {
            throw CommandFailure("a migration ran during the backup: run it again")
        }
        let position = binaryLog ? try Self.binaryLogPosition(inDumpAt: dumpPath) : nil

        var files = [try Self.entry(dumpPath)]
        if let bundle {
            let keysPath = target + "/" + BackupManifest.keysFile
            try writeFile(keysPath, Array(try bundle.text(passphrase: passphrase).utf8), mode: 0o600)
            files.append(try Self.entry(keysPath))
        }
        let manifest = BackupManifest(
            createdAt: ISO8601DateFormatter().string(from: started), siwaVersion: siwaVersion, serverVersion: serverVersion,
            dumpTool: try MariaDBClientTools.version(of: "mariadb-dump"), database: config.database.database ?? "",
            schemaVersion: schemaVersion, binaryLog: position, files: files,
            keyRoles: Array(Set(bundle?.files.map(\.role.rawValue) ?? [])).sorted(), keysSealed: passphrase != nil,
            sealedTokens: sealedCounts, tokenSamples: samples, rowCounts: rowCounts)
        try writeFile(target + "/" + BackupManifest.fileName, Array(manifest.text.utf8), mode: 0o600)

        print("backed up \(manifest.database) (migration \(schemaVersion)) to \(target) in \(String(format: "%.1f", dumpSeconds)) s")
        print(
            "  \(BackupManifest.databaseFile): \(files[0].bytes) bytes; "
                + rowCounts.map { "\($0.rows) \($0.table)" }.joined(separator: ", "))
        if let position {
            print("  binary log position: \(position.file):\(position.position)" + (position.gtid.map { " (GTID \($0))" } ?? ""))
        } else {
            print("  the server writes no binary log (log_bin is off): no point-in-time recovery past this backup")
        }
        if let bundle {
            let roles = Dictionary(grouping: bundle.files, by: \.role).map { "\($0.value.count) \($0.key.rawValue)" }.sorted()
            print(
                "  \(BackupManifest.keysFile): \(roles.joined(separator: ", ")), "
                    + (passphrase != nil ? "sealed with the passphrase" : "IN THE CLEAR"))
        }
        if unencryptedKeys {
            print(
                "warning: \(BackupManifest.keysFile) holds the data key in the clear, and \(BackupManifest.databaseFile) the tokens it seals: "
                    + "whoever reads both has Apple's refresh tokens and can sign access tokens. Keep \(target) readable by its owner only, "
                    + "store keys.siwa apart from database.sql (another place, another medium), or back up with --passphrase-file.")
        }
        if withoutKeys, !sealedCounts.isEmpty {
            print(
                "  no key material: a restore needs the data key \(sealedCounts.keys.sorted().joined(separator: ", ")) from where you keep it"
            )
        }
    }

    /// The configured key files, read now (a file that cannot be read fails the backup).
    static func keyBundle(_ locations: KeyMaterialLocations) throws -> KeyBundle {
        var files: [KeyBundle.File] = []
        func add(_ role: KeyBundle.Role, _ path: String?) throws {
            guard let path else { return }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandFailure("cannot read \(path) (\(role.configurationKey)): run the backup as the service user or root")
            }
            let mode = ((try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int) ?? 0o600
            files.append(KeyBundle.File(role: role, name: (path as NSString).lastPathComponent, mode: mode, contents: Array(data)))
        }
        try add(.dataKeys, locations.dataKeysFile)
        if let directory = locations.accessKeysDirectory {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            for name in names.sorted() where name.hasSuffix(".pem") { try add(.accessKey, directory + "/" + name) }
        }
        try add(.linkSecrets, locations.linkSecretFile)
        try add(.webhookSecrets, locations.webhookSecretFile)
        try add(.applePrivateKey, locations.applePrivateKeyFile)
        return KeyBundle(files: files)
    }

    /// The binary log coordinates that `--master-data=2 --gtid` wrote, commented out: the file and
    /// position at the head of the dump, the GTID position at its end.
    static func binaryLogPosition(inDumpAt path: String) throws -> BackupManifest.BinaryLogPosition {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CommandFailure("cannot read \(path)") }
        defer { try? handle.close() }
        let head = String(decoding: handle.readData(ofLength: 1 << 16), as: UTF8.self)
        let size = handle.seekToEndOfFile()
        handle.seek(toFileOffset: size > 1 << 16 ? size - (1 << 16) : 0)
        let tail = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        var file: String?
        var position: Int64?
        var gtid: String?
        for line in (head + "\n" + tail).split(separator: "\n") where line.hasPrefix("-- ") {
            if line.contains("CHANGE MASTER TO MASTER_LOG_FILE") {
                file = Self.value(in: line, after: "MASTER_LOG_FILE='", until: "'")
                position = Self.value(in: line, after: "MASTER_LOG_POS=", until: ";").flatMap { Int64($0) }
            } else if line.contains("gtid_slave_pos='") {
                gtid = Self.value(in: line, after: "gtid_slave_pos='", until: "'")
            }
        }
        guard let file, let position else {
            throw CommandFailure("\(path) does not name the binary log position (no CHANGE MASTER TO line at its head)")
        }
        return BackupManifest.BinaryLogPosition(file: file, position: position, gtid: gtid?.isEmpty == true ? nil : gtid)
    }

    private static func value(in line: Substring, after prefix: String, until end: Character) -> String? {
        guard let start = line.range(of: prefix)?.upperBound else { return nil }
        return String(line[start...].prefix { $0 != end })
    }

    /// A file's manifest entry: its size and SHA-256, read in blocks.
    static func entry(_ path: String) throws -> BackupManifest.FileEntry {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw CommandFailure("cannot read \(path)") }
        defer { try? handle.close() }
        let descriptor = handle.fileDescriptor
        var bytes: Int64 = 0
        let digest = try SHA256.hash { buffer in
            let count = read(descriptor, buffer.baseAddress, buffer.count)
            guard count >= 0 else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
            bytes += Int64(count)
            return count
        }
        return BackupManifest.FileEntry(name: (path as NSString).lastPathComponent, bytes: bytes, sha256: hexString(digest))
    }

    /// Creates `path` mode 0700, or accepts an empty directory; returns whether it created it.
    private func prepareDirectory(_ path: String) throws -> Bool {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue, (try? FileManager.default.contentsOfDirectory(atPath: path))?.isEmpty == true else {
                throw ToolFailure(status: 73, "\(path) exists and is not an empty directory: a backup goes into a new one")
            }
            return false
        }
        guard mkdir(path, 0o700) == 0 else {
            throw ToolFailure(status: 73, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }
}

/// `path` made absolute against the current directory.
func absolutePath(_ path: String) -> String {
    path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
}

/// The first line of a passphrase file, which must not be empty.
func readPassphrase(_ path: String) throws -> [UInt8] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { throw ToolFailure(status: 66, "cannot read \(path)") }
    let line = text.split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
    guard !line.isEmpty else { throw ToolFailure(status: 65, "\(path): the passphrase (its first line) is empty") }
    return Array(line.utf8)
}

/// Writes a new file with `mode`, refusing one that exists.
func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t) throws {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
    guard descriptor >= 0 else { throw CommandFailure("cannot create \(path): \(String(cString: strerror(errno)))") }
    defer { close(descriptor) }
    let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    guard written == bytes.count, fsync(descriptor) == 0 else {
        throw CommandFailure("cannot write \(path): \(String(cString: strerror(errno)))")
    }
}

/// Runs `body`, turning a backup's failures into their message on standard error and exit status.
func reportingFailures(_ body: () throws -> Void) throws {
    func fail(_ message: String, _ status: Int32) -> ExitCode {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
        return ExitCode(status)
    }
    do { try body() } catch let failure as ToolFailure {
        throw fail(failure.description, failure.status)
    } catch let failure as BackupError {
        let status: Int32 =
            switch failure.code {
            case .damaged, .wrongKey: 65
            case .missing: 66
            case .targetNotEmpty: 73
            }
        throw fail(failure.description, status)
    } catch let failure as CommandFailure {
        throw fail(failure.description, 1)
    } catch let error as MariaDBError {
        throw fail("database: \(error.debugDescription)", 1)
    }
}
