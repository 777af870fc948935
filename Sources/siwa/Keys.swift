import ArgumentParser
import Foundation
import Server

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the signing keys of the app's access tokens.", subcommands: [Rotate.self, List.self])

    struct Options: ParsableArguments {
        @Option(help: "The key directory (default: SIWA_ACCESS_KEYS_DIR).")
        var dir: String?

        func directory() throws -> String {
            guard let dir = dir ?? ProcessInfo.processInfo.environment["SIWA_ACCESS_KEYS_DIR"], !dir.isEmpty else {
                throw ValidationError("set SIWA_ACCESS_KEYS_DIR or pass --dir")
            }
            return dir
        }
    }

    struct Rotate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a new signing key; it signs from the next directory scan (at most 10 s) on.",
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
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let removed = try AccessTokens.pruneKeys(in: directory, retention: retention)
            let keyID = try AccessTokens.addKey(to: directory)
            print("added \(keyID)" + (removed.isEmpty ? "" : "; removed \(removed.joined(separator: ", "))"))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the key ids; the last one signs.")

        @OptionGroup var options: Options

        func run() throws {
            let tokens = try AccessTokens(directory: try options.directory(), issuer: "")
            for key in tokens.keys { print(key.keyID) }
        }
    }
}
