import ArgumentParser
import Foundation
import Identity

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the signing keys of the app's access tokens.", subcommands: [Rotate.self, List.self])

    struct Options: ParsableArguments {
        @Option(help: "The key directory (default: SIWA_ACCESS_KEYS_DIR).")
        var dir: String?

        @Option(help: "The type of a new key: ES256 (P-256) or RS256 (RSA 2048) (default: SIWA_ACCESS_TOKEN_ALGORITHM, else ES256).")
        var algorithm: String?

        func keyAlgorithm() throws -> AccessTokenAlgorithm {
            try OperatorEnvironment.adopt()
            let name = algorithm ?? ProcessInfo.processInfo.environment["SIWA_ACCESS_TOKEN_ALGORITHM"] ?? "ES256"
            guard let algorithm = AccessTokenAlgorithm(rawValue: name.uppercased()) else {
                throw ValidationError("the algorithm is ES256 or RS256, not \(name)")
            }
            return algorithm
        }

        /// The key directory; `sudo siwa keys …` reads /etc/siwa/siwa.env and writes as the service user.
        func directory() throws -> String {
            // A --dir relative to the caller's directory, before a `sudo siwa` moves to the units'.
            let given = dir.map { $0.hasPrefix("/") ? $0 : FileManager.default.currentDirectoryPath + "/" + $0 }
            try OperatorEnvironment.adopt()
            guard let dir = given ?? ProcessInfo.processInfo.environment["SIWA_ACCESS_KEYS_DIR"], !dir.isEmpty else {
                throw ValidationError("set SIWA_ACCESS_KEYS_DIR or pass --dir")
            }
            return dir
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Add a new signing key of the configured type; it signs from the next directory scan (SIWA_ACCESS_KEYS_RESCAN) on.",
            discussion: """
                Tokens signed with older keys stay valid until they expire: the older keys keep verifying and stay in \
                /auth/jwks.json. Keys replaced more than --retention seconds ago are removed.
                """)

        @OptionGroup var options: Options

        @Option(help: "Seconds a replaced key is kept (at least the access-token lifetime, 900).")
        var retention: Double = 1200

        func run() throws {
            guard retention >= Double(AccessTokens.lifetime) else { throw ValidationError("--retention must be at least 900") }
            let directory = try options.directory()
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ValidationError("cannot create \(directory) as this user: install -d -o siwa -g siwa -m 0700 \(directory)")
            }
            guard FileManager.default.isWritableFile(atPath: directory) else {
                throw ValidationError(
                    "cannot write to \(directory): run this as the user who owns it (runuser -u siwa -- siwa keys rotate ...), "
                        + "or make it theirs: install -d -o siwa -g siwa -m 0700 \(directory)")
            }
            let algorithm = try options.keyAlgorithm()
            let removed = try AccessTokenKeyFiles.prune(in: directory, retention: retention, now: Date())
            let keyID = try AccessTokenKeyFiles.add(algorithm, to: directory, now: Date())
            print("added \(keyID)" + (removed.isEmpty ? "" : "; removed \(removed.joined(separator: ", "))"))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the key ids and types; the last one signs.")

        @OptionGroup var options: Options

        func run() throws {
            for key in try AccessTokenKeyFiles.load(try options.directory()) { print("\(key.keyID) \(key.algorithm.rawValue)") }
        }
    }
}
