package import Accounts
import JOSE
import StrictJSON

/// `manifest.json` of a backup directory: what was backed up, from which versions, where the
/// binary log stood at the dump's snapshot (the start of a point-in-time recovery), each file's
/// size and SHA-256, and a few sealed Apple tokens with the count per data key, so that a restore
/// can prove, before it writes anything, that the keys it was given open them.
package struct BackupManifest: Sendable, Equatable {
    /// A file of the backup directory with its size and checksum.
    package struct FileEntry: Sendable, Equatable {
        package var name: String
        package var bytes: Int64
        /// Lowercase hexadecimal SHA-256.
        package var sha256: String

        package init(name: String, bytes: Int64, sha256: String) {
            self.name = name
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    /// The binary log's coordinates at the dump's snapshot: replaying the log from there (with
    /// `mariadb-binlog --start-position`) brings a restored database forward in time.
    package struct BinaryLogPosition: Sendable, Equatable {
        package var file: String
        package var position: Int64
        /// The GTID position at the snapshot, when the dump gave one.
        package var gtid: String?

        package init(file: String, position: Int64, gtid: String?) {
            self.file = file
            self.position = position
            self.gtid = gtid
        }
    }

    static let format = "siwa-backup-1"
    /// The dump's file name in the backup directory.
    package static let databaseFile = "database.sql"
    /// The key bundle's file name in the backup directory.
    package static let keysFile = "keys.siwa"
    /// The manifest's own file name.
    package static let fileName = "manifest.json"

    /// When the backup was taken (ISO 8601, UTC).
    package var createdAt: String
    package var siwaVersion: String
    /// MariaDB's `VERSION()`.
    package var serverVersion: String
    /// The dump tool and its version, as `mariadb-dump --version` prints it.
    package var dumpTool: String
    /// The database's name when it was backed up.
    package var database: String
    /// The newest migration applied to the database (`NNNN` of `sql/NNNN_name.sql`).
    package var schemaVersion: Int
    /// Nil when the server wrote no binary log: no point-in-time recovery from this backup.
    package var binaryLog: BinaryLogPosition?
    package var files: [FileEntry]
    /// The roles of the key bundle's files (`KeyBundle.Role`).
    package var keyRoles: [String]
    /// Whether the key bundle is sealed with a passphrase.
    package var keysSealed: Bool
    /// Sealed Apple refresh tokens per data key id, counted just before the dump.
    package var sealedTokens: [String: Int]
    /// A few sealed tokens per data key id.
    package var tokenSamples: [SealedAppleToken]
    /// Rows per table (`BackupStatements.countedTables`), counted just before the dump.
    package var rowCounts: [(table: String, rows: Int)]

    package init(
        createdAt: String, siwaVersion: String, serverVersion: String, dumpTool: String, database: String, schemaVersion: Int,
        binaryLog: BinaryLogPosition?, files: [FileEntry], keyRoles: [String], keysSealed: Bool, sealedTokens: [String: Int],
        tokenSamples: [SealedAppleToken], rowCounts: [(table: String, rows: Int)]
    ) {
        self.createdAt = createdAt
        self.siwaVersion = siwaVersion
        self.serverVersion = serverVersion
        self.dumpTool = dumpTool
        self.database = database
        self.schemaVersion = schemaVersion
        self.binaryLog = binaryLog
        self.files = files
        self.keyRoles = keyRoles
        self.keysSealed = keysSealed
        self.sealedTokens = sealedTokens
        self.tokenSamples = tokenSamples
        self.rowCounts = rowCounts
    }

    package static func == (lhs: BackupManifest, rhs: BackupManifest) -> Bool { lhs.text == rhs.text }

    /// The file entry called `name`.
    package func file(_ name: String) -> FileEntry? { files.first { $0.name == name } }

    /// The manifest's JSON, one member per line.
    package var text: String {
        func array(_ elements: [String]) -> JSONText.Value { .raw("[" + elements.joined(separator: ",") + "]") }
        let members: [(String, JSONText.Value?)] = [
            ("format", .string(Self.format)), ("createdAt", .string(createdAt)), ("siwaVersion", .string(siwaVersion)),
            ("serverVersion", .string(serverVersion)), ("dumpTool", .string(dumpTool)), ("database", .string(database)),
            ("schemaVersion", .integer(Int64(schemaVersion))),
            (
                "binaryLog",
                binaryLog.map {
                    .raw(
                        JSONText.object([
                            ("file", .string($0.file)), ("position", .integer($0.position)), ("gtid", $0.gtid.map { .string($0) }),
                        ]))
                }
            ),
            (
                "files",
                array(
                    files.map {
                        JSONText.object([("name", .string($0.name)), ("bytes", .integer($0.bytes)), ("sha256", .string($0.sha256))])
                    })
            ),
            ("keyRoles", array(keyRoles.map(JSONText.quoted))), ("keysSealed", .bool(keysSealed)),
            ("sealedTokens", .raw(JSONText.object(sealedTokens.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) }))),
            (
                "tokenSamples",
                array(
                    tokenSamples.map {
                        JSONText.object([
                            ("keyId", .string($0.keyID)), ("clientId", .string($0.clientID)),
                            ("token", .string(Base64URL.encode($0.ciphertext))),
                        ])
                    })
            ),
            ("rowCounts", .raw(JSONText.object(rowCounts.map { ($0.table, .integer(Int64($0.rows))) }))),
        ]
        return "{\n"
            + members.compactMap { name, value in value.map { JSONText.object([(name, $0)]).dropFirst().dropLast() } }
            .joined(separator: ",\n") + "\n}\n"
    }

    /// Reads a manifest's text.
    /// - Throws: `BackupError(.damaged)` naming what is missing or malformed.
    package init(text: String) throws(BackupError) {
        let object: JSONObject
        do { object = try JSONObject(parsing: text, limits: JSONLimits(depth: 4)) } catch {
            throw BackupError(.damaged, "\(Self.fileName) is not JSON: \(error)")
        }
        func fail(_ what: String) -> BackupError { BackupError(.damaged, "\(Self.fileName): \(what)") }
        guard (try? object.string("format")) == Self.format else { throw fail("not a siwa backup manifest (\(Self.format))") }
        guard let createdAt = try? object.string("createdAt"), let siwaVersion = try? object.string("siwaVersion"),
            let serverVersion = try? object.string("serverVersion"), let dumpTool = try? object.string("dumpTool"),
            let database = try? object.string("database"), let schemaVersion = try? object.integer("schemaVersion"),
            let keysSealed = try? object.bool("keysSealed"), let keyRoles = try? object.stringArray("keyRoles")
        else { throw fail("a version, the database, the schema version or the key roles are missing") }
        var binaryLog: BinaryLogPosition?
        if let log = try? object.object("binaryLog") {
            guard let file = try? log.string("file"), let position = try? log.integer("position") else {
                throw fail("binaryLog lacks its file or position")
            }
            binaryLog = BinaryLogPosition(file: file, position: position, gtid: try? log.string("gtid"))
        }
        var files: [FileEntry] = []
        for entry in (try? object.objectArray("files")) ?? [] {
            guard let name = try? entry.string("name"), let bytes = try? entry.integer("bytes"), let sha256 = try? entry.string("sha256")
            else { throw fail("a file entry lacks its name, size or checksum") }
            files.append(FileEntry(name: name, bytes: bytes, sha256: sha256))
        }
        var sealedTokens: [String: Int] = [:]
        if let counts = try? object.object("sealedTokens") {
            for key in counts.keys {
                guard let count = try? counts.integer(key) else { throw fail("sealedTokens.\(key) is not a count") }
                sealedTokens[key] = Int(count)
            }
        }
        var samples: [SealedAppleToken] = []
        for sample in (try? object.objectArray("tokenSamples")) ?? [] {
            guard let keyID = try? sample.string("keyId"), let clientID = try? sample.string("clientId"),
                let token = (try? sample.string("token")).flatMap({ Base64URL.decode($0) })
            else { throw fail("a token sample lacks its key id, client id or token") }
            samples.append(SealedAppleToken(ciphertext: token, keyID: keyID, clientID: clientID))
        }
        var rowCounts: [(table: String, rows: Int)] = []
        if let counts = try? object.object("rowCounts") {
            for table in counts.keys { rowCounts.append((table, Int((try? counts.integer(table)) ?? 0))) }
        }
        self.init(
            createdAt: createdAt, siwaVersion: siwaVersion, serverVersion: serverVersion, dumpTool: dumpTool, database: database,
            schemaVersion: Int(schemaVersion), binaryLog: binaryLog, files: files, keyRoles: keyRoles, keysSealed: keysSealed,
            sealedTokens: sealedTokens, tokenSamples: samples, rowCounts: rowCounts)
    }
}
