import Foundation
import JOSE
import StrictJSON

/// The key material a backup holds next to the database: the files the configuration names
/// (the data keys, the access-token signing keys, the link and webhook secrets, Apple's `.p8`
/// key), each with its role, its file name and mode, sealed with a passphrase or, when the
/// operator asks for it, in the clear.
///
/// Sealed, the file is JSON `{"format", "encryption", "iterations", "salt", "sealed"}`: the files'
/// JSON sealed with AES-256-GCM under a key derived from the passphrase with PBKDF2-HMAC-SHA256
/// (`PBKDF2.recommendedIterations`, a random 16-byte salt); the format name is the associated
/// data. In the clear, `{"format", "encryption": "none", "files"}`.
package struct KeyBundle: Sendable, Equatable {
    /// One file of key material.
    package struct File: Sendable, Equatable {
        /// What the file is: one of `Role`'s names.
        package var role: Role
        /// The file's name (an access-token key's `<kid>.pem`).
        package var name: String
        /// Its permission bits.
        package var mode: Int
        package var contents: [UInt8]

        package init(role: Role, name: String, mode: Int, contents: [UInt8]) {
            self.role = role
            self.name = name
            self.mode = mode
            self.contents = contents
        }
    }

    /// The kinds of key material, each named by one configuration key.
    package enum Role: String, Sendable, CaseIterable {
        /// `SIWA_DATA_KEYS_FILE`: the keys that encrypt Apple's refresh tokens.
        case dataKeys = "data-keys"
        /// A file of `SIWA_ACCESS_KEYS_DIR`: an access-token signing key.
        case accessKey = "access-key"
        /// `SIWA_LINK_SECRET_FILE`.
        case linkSecrets = "link-secrets"
        /// `SIWA_WEBHOOK_SECRET_FILE`.
        case webhookSecrets = "webhook-secrets"
        /// `SIWA_APPLE_PRIVATE_KEY_FILE`: the Sign in with Apple key (`.p8`).
        case applePrivateKey = "apple-private-key"

        /// The configuration key that names where the role's file goes.
        package var configurationKey: String {
            switch self {
            case .dataKeys: "SIWA_DATA_KEYS_FILE"
            case .accessKey: "SIWA_ACCESS_KEYS_DIR"
            case .linkSecrets: "SIWA_LINK_SECRET_FILE"
            case .webhookSecrets: "SIWA_WEBHOOK_SECRET_FILE"
            case .applePrivateKey: "SIWA_APPLE_PRIVATE_KEY_FILE"
            }
        }
    }

    static let format = "siwa-key-bundle-1"
    static let sealing = "PBKDF2-HMAC-SHA256/AES-256-GCM"

    package var files: [File]

    package init(files: [File]) { self.files = files }

    /// The files of `role`.
    package func files(_ role: Role) -> [File] { files.filter { $0.role == role } }

    /// The bundle's text: sealed with `passphrase`, or in the clear when it is nil.
    package func text(passphrase: [UInt8]?) throws -> String {
        let inner =
            "["
            + files.map { file in
                JSONText.object([
                    ("role", .string(file.role.rawValue)), ("name", .string(file.name)), ("mode", .integer(Int64(file.mode))),
                    ("contents", .string(Base64URL.encode(file.contents))),
                ])
            }.joined(separator: ",") + "]"
        guard let passphrase else {
            return JSONText.object([("format", .string(Self.format)), ("encryption", .string("none")), ("files", .raw(inner))]) + "\n"
        }
        let salt = try SecureRandom.bytes(count: 16)
        let iterations = PBKDF2.recommendedIterations
        let key = try PBKDF2.sha256(password: passphrase, salt: salt, iterations: iterations)
        let sealed = try AES256GCM.seal(Array(inner.utf8), key: key, associatedData: Array(Self.format.utf8))
        return JSONText.object([
            ("format", .string(Self.format)), ("encryption", .string(Self.sealing)), ("iterations", .integer(Int64(iterations))),
            ("salt", .string(Base64URL.encode(salt))), ("sealed", .string(Base64URL.encode(sealed))),
        ]) + "\n"
    }

    /// Whether the bundle's text is sealed with a passphrase.
    package static func isSealed(_ text: String) throws(BackupError) -> Bool {
        try outer(text).encryption != "none"
    }

    /// Reads a bundle's text, opening it with `passphrase` when it is sealed.
    /// - Throws: `BackupError(.damaged)` for a text that is not a bundle, a wrong passphrase or an
    ///   altered bundle; `.missing` for a sealed bundle without a passphrase.
    package init(text: String, passphrase: [UInt8]?) throws(BackupError) {
        let (encryption, object) = try Self.outer(text)
        let inner: String
        if encryption == "none" {
            guard let files = try? object.objectArray("files") else { throw BackupError(.damaged, "the key bundle has no files") }
            self.files = try files.map(Self.file)
            return
        }
        guard let passphrase else {
            throw BackupError(.missing, "the key bundle is sealed with a passphrase: give it with --passphrase-file")
        }
        guard encryption == Self.sealing, let iterations = try? object.integer("iterations"), (1...10_000_000).contains(iterations),
            let salt = (try? object.string("salt")).flatMap({ Base64URL.decode($0) }),
            let sealed = (try? object.string("sealed")).flatMap({ Base64URL.decode($0) })
        else { throw BackupError(.damaged, "the key bundle's sealing is not \(Self.sealing) with its salt and iterations") }
        let opened: [UInt8]?
        do {
            let key = try PBKDF2.sha256(password: passphrase, salt: salt, iterations: Int(iterations))
            opened = try AES256GCM.open(sealed, key: key, associatedData: Array(Self.format.utf8))
        } catch {
            throw BackupError(.damaged, "the key bundle could not be opened: \(error)")
        }
        guard let opened else {
            throw BackupError(.damaged, "the key bundle does not open with this passphrase (a wrong passphrase, or the file was altered)")
        }
        inner = String(decoding: opened, as: UTF8.self)
        guard let array = try? JSONObject(parsing: "{\"files\":" + inner + "}", limits: JSONLimits(depth: 4)),
            let files = try? array.objectArray("files")
        else { throw BackupError(.damaged, "the key bundle's contents are not its list of files") }
        self.files = try files.map(Self.file)
    }

    private static func outer(_ text: String) throws(BackupError) -> (encryption: String, object: JSONObject) {
        guard let object = try? JSONObject(parsing: text, limits: JSONLimits(depth: 4)),
            (try? object.string("format")) == Self.format, let encryption = (try? object.string("encryption"))
        else { throw BackupError(.damaged, "not a siwa key bundle (\(Self.format))") }
        return (encryption, object)
    }

    private static func file(_ object: JSONObject) throws(BackupError) -> File {
        guard let roleName = (try? object.string("role")), let role = Role(rawValue: roleName),
            let name = (try? object.string("name")), !name.isEmpty, !name.contains("/"), name != "..",
            let mode = (try? object.integer("mode")), (0...0o777).contains(mode),
            let contents = (try? object.string("contents")).flatMap({ Base64URL.decode($0) })
        else { throw BackupError(.damaged, "a file of the key bundle lacks its role, name, mode or contents") }
        return File(role: role, name: name, mode: Int(mode), contents: contents)
    }
}
