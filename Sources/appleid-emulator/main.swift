import AppleIDEmulator
import ArgumentParser
import FastCGI
import Foundation
import HTTPClient
import Threads

/// `appleid-emulator --config FILE`: serves the Apple ID emulator over FastCGI on the configured
/// unix socket until SIGTERM or SIGINT.
struct EmulatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "appleid-emulator",
        abstract: "A local stand-in for Apple's Sign in with Apple endpoints, served over FastCGI.",
        discussion: "See docs/EMULATOR.md for the configuration file and the admin API.",
        subcommands: [Serve.self, Mint.self, MakeKey.self], defaultSubcommand: Serve.self)
}

/// `appleid-emulator mint --config FILE --client-id ID --count N`: prints N identity tokens of new
/// people, `<token> <raw nonce>` per line, signed with the emulator's current key (for benchmarks);
/// with `--user-ids FILE` instead of `--count`, a token for each person named in the file (the
/// people of a seeded database, `seed-<user id>`).
struct Mint: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print identity tokens of new people for load tests: `<token> <raw nonce>` per line.")

    @Option(help: "The JSON configuration file.")
    var config: String

    @Option(help: "The client id (audience).")
    var clientId: String

    @Option(help: "How many tokens (at most 1,000,000).")
    var count: Int = 0

    @Option(help: "A file of user ids, one a line: a token for each of these people instead of --count new ones.")
    var userIds: String?

    func run() throws {
        let userIDs = try userIds.map {
            try String(contentsOfFile: $0, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
        }
        guard (1...1_000_000).contains(userIDs?.count ?? count) else {
            throw ValidationError("--count (or the ids of --user-ids) must be 1...1000000")
        }
        let emulator = try Emulator(configuration: try EmulatorConfiguration.load(path: config))
        var out = ""
        for (token, nonce) in try emulator.benchmarkTokens(clientID: clientId, count: count, userIDs: userIDs) {
            out += token + " " + nonce + "\n"
        }
        FileHandle.standardOutput.write(Data(out.utf8))
    }
}

/// `appleid-emulator make-key --key-id ID --dir DIR`: the team's key, as Apple lets you download it.
struct MakeKey: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a new team key as Apple's download names it, DIR/AuthKey_<key id>.p8 (P-256, PKCS#8, mode 0600).",
        discussion: "The emulator's teamKeyFile and siwa's SIWA_APPLE_PRIVATE_KEY_FILE (siwa setup --p8) are this file.")

    @Option(help: "The key id: 10 characters A-Z and 0-9 (the configuration's keyId, siwa's --key-id).")
    var keyId: String

    @Option(help: "The directory to write it in.")
    var dir: String

    func run() throws {
        do {
            print(try TeamKeyFile.write(keyID: keyId, directory: dir))
        } catch let refusal as TeamKeyFile.Refusal {
            FileHandle.standardError.write(Data("appleid-emulator: \(refusal)\n".utf8))
            throw ExitCode(1)
        }
    }
}

/// `appleid-emulator [serve] --config FILE`.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve the emulator on the configured unix socket until SIGTERM or SIGINT.")

    @Option(help: "The JSON configuration file.")
    var config: String

    func run() throws {
        TerminationSignals.block()
        let configuration: EmulatorConfiguration
        let emulator: Emulator
        do {
            configuration = try EmulatorConfiguration.load(path: config)
            emulator = try Emulator(configuration: configuration)
        } catch {
            FileHandle.standardError.write(Data("appleid-emulator: \(error)\n".utf8))
            throw ExitCode(78)
        }
        initializeFastCGI()
        initializeHTTPClientLibrary()
        let listener = try Listener(path: configuration.socket, mode: 0o660, backlog: 128)
        let signals = try TerminationSignals.onTermination { _ in listener.shutdown() }
        let pool = WorkerPool(
            listener: listener,
            configuration: WorkerPoolConfiguration(threads: configuration.threads, headerNames: ["authorization"], maxBodyBytes: 64 * 1024)
        ) { _ in EmulatorWorker(emulator) }
        FileHandle.standardError.write(Data("appleid-emulator: serving on \(configuration.socket)\n".utf8))
        try pool.run()
        signals.join()
    }
}

/// One worker thread's handler: every request goes to the shared emulator.
final class EmulatorWorker: RequestHandler {
    private let emulator: Emulator
    init(_ emulator: Emulator) { self.emulator = emulator }
    func respond(to request: Request) -> Response { emulator.respond(to: request) }
    func respond(toUnreadableRequest error: FastCGIError) -> Response {
        Response(status: 400, contentType: "application/json;charset=ISO-8859-1", body: Array(#"{"error":"invalid_request"}"#.utf8))
    }
    func close() {}
}

EmulatorCommand.main()
