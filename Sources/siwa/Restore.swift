import Accounts
import ArgumentParser
import Foundation
import Identity
import MariaDB
import SiwaConfig

#if canImport(Glibc)
    import Glibc
#endif

/// `siwa restore DIR`: a backup of `siwa backup` into the configured database and key paths, each
/// part checked before it is used (docs/OPERATIONS.md, "Backup and restore").
struct Restore: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restore a backup of siwa backup into the configured database and key files.",
        discussion: """
            In order, stopping at the first problem: the manifest's checksums of database.sql and keys.siwa; the key \
            bundle opened with the passphrase (or, without the bundle, the data keys file already at \
            SIWA_DATA_KEYS_FILE); the data keys checked against the backup's sealed Apple tokens (every data key id \
            that seals one must be there and open the sampled tokens); the targets (a database with tables is \
            refused without --replace-database, a key file that exists with other contents always); the dump \
            loaded into SIWA_DB_NAME (created if missing); the data keys checked again on tokens sampled from the \
            restored database (the database is dropped again if they fail); the key files written (mode 0600, the \
            access-key directory 0700; run as root without a configuration, as `siwa setup` owns them); the \
            migrations of this siwa applied when the backup is older (unless --skip-migrations). Only SIWA_DB_*, SIWA_MIGRATIONS_DIR and the key paths of the configuration are read: the key files need not \
            exist yet. Stop siwa serve and siwa jobs first. \
            Exit status: 0 restored; 64 wrong options; 65 the backup is damaged or altered, a wrong passphrase, or \
            a data key that does not open the tokens; 66 a part is missing (the manifest, the key bundle, a data key \
            the tokens need); 73 the target is not empty; 69 mariadb failed or is missing; 78 the configuration is \
            invalid; 1 anything else.
            """)

    @Argument(help: "The backup directory that siwa backup wrote.")
    var directory: String

    @Option(help: "A file whose first line is the passphrase the key material was sealed with.")
    var passphraseFile: String?

    @Option(help: "The key bundle, when it is kept apart from the backup (default: DIR/keys.siwa).")
    var keys: String?

    @Flag(help: "Replace a database that has tables: they are dropped before the backup is loaded.")
    var replaceDatabase = false

    @Option(help: "Create and load the database as MariaDB's root over this unix socket (socket authentication).")
    var dbAdminSocket: String?

    @Flag(help: "Leave the schema as the backup has it, for the older siwa it came from (a rollback).")
    var skipMigrations = false

    func run() throws {
        let source = absolutePath(directory)
        let keysPath = absolutePath(keys ?? (directory + "/" + BackupManifest.keysFile))
        let passphrase = try passphraseFile.map { try readPassphrase(absolutePath($0)) }
        let adopted = try OperatorEnvironment.adopt(droppingRoot: false)
        let environment = ProcessInfo.processInfo.environment
        let config: AppConfig
        do { config = try KeyMaterialLocations.restoreConfiguration(environment: environment) } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data((error.description + "\n").utf8))
            throw ExitCode(78)
        }
        let locations = KeyMaterialLocations(environment: environment)
        try reportingFailures {
            try restore(from: source, keysPath: keysPath, passphrase: passphrase, config: config, locations: locations, asService: adopted)
        }
    }

    private func restore(
        from source: String, keysPath: String, passphrase: [UInt8]?, config: AppConfig, locations: KeyMaterialLocations, asService: Bool
    ) throws {
        // 1. The manifest and the checksums.
        guard let manifestText = try? String(contentsOfFile: source + "/" + BackupManifest.fileName, encoding: .utf8) else {
            throw BackupError(.missing, "no \(BackupManifest.fileName) in \(source): not a directory of siwa backup")
        }
        let manifest = try BackupManifest(text: manifestText)
        let dumpPath = source + "/" + BackupManifest.databaseFile
        try Self.verify(dumpPath, manifest.file(BackupManifest.databaseFile))
        let hasBundle = FileManager.default.fileExists(atPath: keysPath)
        if hasBundle { try Self.verify(keysPath, manifest.file(BackupManifest.keysFile)) }
        let migrator = try Migrator(directory: config.migrationsDirectory)
        let newest = migrator.migrations.map(\.version).max() ?? 0
        guard manifest.schemaVersion <= newest else {
            throw BackupError(
                .damaged,
                "the backup's schema is at migration \(manifest.schemaVersion), newer than this siwa's (\(newest)): "
                    + "restore it with siwa \(manifest.siwaVersion) or later")
        }
        print(
            "checked \(BackupManifest.databaseFile)" + (hasBundle ? " and \((keysPath as NSString).lastPathComponent)" : "")
                + " against the manifest of \(manifest.createdAt) (siwa \(manifest.siwaVersion), migration \(manifest.schemaVersion))")

        // 2. The key material and the data keys' proof, before anything is written.
        let bundle: KeyBundle?
        if hasBundle {
            guard let text = try? String(contentsOfFile: keysPath, encoding: .utf8) else {
                throw BackupError(.damaged, "cannot read \(keysPath)")
            }
            bundle = try KeyBundle(text: text, passphrase: passphrase)
        } else {
            bundle = nil
        }
        let (dataKeys, keySource) = try Self.dataKeys(bundle: bundle, keysPath: keysPath, locations: locations)
        if let problem = DataKeyCheck.problem(
            keys: dataKeys, source: keySource, sealedCounts: manifest.sealedTokens, samples: manifest.tokenSamples)
        {
            throw problem
        }
        let writes = try Self.keyFileWrites(bundle, locations, owningAsService: asService)

        // 3. The database: refused when it has tables, unless replaced; loaded; checked.
        guard let name = config.database.database, BackupStatements.isPlainName(name) else {
            throw CommandFailure("SIWA_DB_NAME must be letters, digits, _ or $ for a restore")
        }
        initializeMariaDBLibrary()
        var serverConfiguration = config.database
        serverConfiguration.database = nil
        serverConfiguration.readWriteTimeout = MigrationRunner.migrationReadTimeout
        let server = Connection(configuration: serverConfiguration)
        defer { server.close() }
        if let tables = try BackupStatements.tableCount(database: name, on: server), tables > 0 {
            guard replaceDatabase else {
                throw BackupError(
                    .targetNotEmpty, "the database \(name) has \(tables) table(s): restore into an empty one, or pass --replace-database")
            }
            try BackupStatements.dropDatabase(name, on: server)
        }
        let tools = try MariaDBClientTools(database: config.database, adminSocket: dbAdminSocket)
        defer { tools.close() }
        let started = Date()
        do {
            if dbAdminSocket == nil {
                try BackupStatements.createDatabase(name, on: server)
            } else {
                try tools.run(
                    "mariadb", ["-e", "CREATE DATABASE IF NOT EXISTS `\(name)` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"])
            }
            try tools.run("mariadb", ["--default-character-set=utf8mb4", "--database=\(name)"], input: dumpPath)
        } catch {
            try? BackupStatements.dropDatabase(name, on: server)
            throw error
        }
        let loadSeconds = Date().timeIntervalSince(started)
        var restoredConfiguration = config.database
        restoredConfiguration.allowsMultipleStatements = true
        restoredConfiguration.readWriteTimeout = MigrationRunner.migrationReadTimeout
        let connection = Connection(configuration: restoredConfiguration)
        defer { connection.close() }
        let counts: [(table: String, rows: Int)]
        do {
            let sealed = try BackupStatements.sealedTokenCounts(on: connection)
            let samples = try DataKeyCheck.samples(of: sealed, on: connection)
            if let problem = DataKeyCheck.problem(keys: dataKeys, source: keySource, sealedCounts: sealed, samples: samples) {
                throw problem
            }
            counts = try BackupStatements.rowCounts(on: connection)
        } catch {
            try? BackupStatements.dropDatabase(name, on: server)
            FileHandle.standardError.write(Data("the database \(name) was dropped again\n".utf8))
            throw error
        }
        print(
            "loaded \(name) in \(String(format: "%.1f", loadSeconds)) s: " + counts.map { "\($0.rows) \($0.table)" }.joined(separator: ", ")
        )
        print(
            manifest.sealedTokens.isEmpty
                ? "  no Apple token is stored: no data key needed to open one"
                : "  the data key(s) \(manifest.sealedTokens.keys.sorted().joined(separator: ", ")) of \(keySource) open the sampled Apple tokens"
        )

        // 4. The key files, then the migrations.
        for write in writes { try write() }
        if let bundle {
            print(
                "  wrote \(bundle.files.count) key file(s): "
                    + Set(bundle.files.map(\.role.configurationKey)).sorted().joined(separator: ", "))
        }
        if manifest.schemaVersion < newest, skipMigrations {
            print("  left at migration \(manifest.schemaVersion) (--skip-migrations); this siwa's newest is \(newest)")
        } else if manifest.schemaVersion < newest {
            let done = try MigrationRunner(migrator).migrate(on: connection) { print("  \($0)") }
            print("  migrated from \(manifest.schemaVersion) to \(newest) (\(done.count) migration(s))")
        }
        if let log = manifest.binaryLog {
            let rename = manifest.database == name ? "" : " --rewrite-db='\(manifest.database)->\(name)'"
            print(
                "  binary log at the backup: \(log.file):\(log.position); to recover past it: mariadb-binlog "
                    + "--database=\(manifest.database)\(rename) --start-position=\(log.position) \(log.file) ... | mariadb \(name)")
        }
        print("restored; start siwa serve and siwa jobs")
    }

    /// Checks a file's size and SHA-256 against its manifest entry.
    static func verify(_ path: String, _ entry: BackupManifest.FileEntry?) throws {
        let name = (path as NSString).lastPathComponent
        guard let entry else { throw BackupError(.damaged, "the manifest lists no \(name)") }
        guard FileManager.default.fileExists(atPath: path) else { throw BackupError(.missing, "\(path) is missing") }
        let found = try Backup.entry(path)
        guard found.bytes == entry.bytes, found.sha256 == entry.sha256 else {
            throw BackupError(
                .damaged,
                "\(name) differs from the manifest (\(found.bytes) bytes, SHA-256 \(found.sha256.prefix(16))…; the manifest: "
                    + "\(entry.bytes) bytes, \(entry.sha256.prefix(16))…): the backup is damaged or was changed")
        }
    }

    /// The data keys to restore with: the bundle's, else the file already at SIWA_DATA_KEYS_FILE;
    /// and where they come from, for the messages.
    static func dataKeys(bundle: KeyBundle?, keysPath: String, locations: KeyMaterialLocations) throws -> (DataKeys?, String) {
        if let bundle {
            guard let file = bundle.files(.dataKeys).first else {
                return (nil, "the key bundle \(keysPath) holds no data keys file")
            }
            do { return (try DataKeys(text: String(decoding: file.contents, as: UTF8.self)), "the key bundle's \(file.name)") } catch {
                throw BackupError(.damaged, "the key bundle's data keys file: \(error)")
            }
        }
        guard let path = locations.dataKeysFile else {
            return (nil, "there is no key bundle at \(keysPath) and SIWA_DATA_KEYS_FILE is not set")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            return (nil, "there is no key bundle at \(keysPath) and no SIWA_DATA_KEYS_FILE at \(path)")
        }
        do { return (try DataKeys(text: text), "SIWA_DATA_KEYS_FILE (\(path))") } catch {
            throw BackupError(.damaged, "SIWA_DATA_KEYS_FILE (\(path)): \(error)")
        }
    }

    /// The writes of the bundle's files to the configured paths, checked now: a file that exists
    /// with the same contents is left as it is, one with other contents refuses the restore, and a
    /// role the configuration names no path for is named. `owningAsService`: the files are given
    /// the ownership of `siwa setup`'s (`OperatorEnvironment.ownKeyFile`).
    static func keyFileWrites(_ bundle: KeyBundle?, _ locations: KeyMaterialLocations, owningAsService: Bool) throws -> [() throws -> Void]
    {
        guard let bundle else { return [] }
        var writes: [() throws -> Void] = []
        for file in bundle.files {
            let target: String?
            switch file.role {
            case .dataKeys: target = locations.dataKeysFile
            case .accessKey: target = locations.accessKeysDirectory.map { $0 + "/" + file.name }
            case .linkSecrets: target = locations.linkSecretFile
            case .webhookSecrets: target = locations.webhookSecretFile
            case .applePrivateKey: target = locations.applePrivateKeyFile
            }
            guard let target else {
                throw BackupError(
                    .missing, "the backup holds \(file.role.rawValue) \(file.name), but \(file.role.configurationKey) is not set")
            }
            if let existing = FileManager.default.contents(atPath: target) {
                guard Array(existing) == file.contents else {
                    throw BackupError(
                        .targetNotEmpty, "\(target) (\(file.role.configurationKey)) exists with other contents: move it away first")
                }
                continue
            }
            let directory = (target as NSString).deletingLastPathComponent
            let serviceOwned = file.role == .accessKey
            writes.append {
                if !FileManager.default.fileExists(atPath: directory) {
                    try FileManager.default.createDirectory(
                        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                    if serviceOwned, owningAsService { try OperatorEnvironment.ownKeyFile(directory, serviceOwned: true, directory: true) }
                }
                try writeFile(target, file.contents, mode: 0o600)
                if owningAsService { try OperatorEnvironment.ownKeyFile(target, serviceOwned: serviceOwned) }
            }
        }
        return writes
    }
}
