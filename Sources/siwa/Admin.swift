import Accounts
import ArgumentParser
import Foundation
import Identity
import MariaDB
import SiwaConfig

#if canImport(Glibc)
    import Glibc
#endif

/// `siwa admin`: the operator's commands, with the configuration of `siwa serve`. Every change, and
/// every read of a person's data (find, show, export), records an audit event naming the operator
/// (`OperatorEnvironment.operatorName()`: the person who ran sudo or logged in, else the account
/// the command was started as). A user is named by id, Apple `sub`, or an email or relay address.
struct Admin: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find, show, disable, enable, export and delete users; end sessions; read the audit log.",
        discussion: """
            A user is named by their id, their Apple sub, or an email address of theirs (a private relay \
            address among them); a name that fits no user, or several, is refused (exit status 1). Every \
            change, and every read of a person's data (find, show, export), is recorded as an audit event \
            admin_<action> naming the operator: the person who ran sudo (SUDO_USER), else the login \
            session's user, else the account the command was started as (root).
            """,
        subcommands: [Find.self, Show.self, Disable.self, Enable.self, RevokeSession.self, Delete.self, Export.self, Audit.self],
        aliases: ["users"])

    /// `--json` of every command: JSON instead of a table.
    struct Output: ParsableArguments {
        @Flag(help: "Print JSON instead of a readable table.") var json = false
    }

    struct Find: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Find users by id, email (exact, any of theirs) or Apple sub; each found is recorded (admin_find).")
        @Argument(help: "A user id, an email address or an Apple sub.") var query: String
        @OptionGroup var output: Output

        func run() throws {
            let users = try withAdminUseCases { try $0.findUsers(query, by: OperatorEnvironment.operatorName()) }
            if output.json {
                print(AccountExportJSON.array(users.map(AdminText.json)))
            } else if users.isEmpty {
                print("no user matches \(query)")
            } else {
                AdminText.table(
                    ["id", "name", "email", "created", "status"],
                    users.map {
                        [
                            String($0.userID), $0.name ?? "", $0.email ?? "", AdminText.time($0.createdAt),
                            $0.isDisabled ? "disabled" : "active",
                        ]
                    })
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Show a user: profile, Apple identities, emails, sessions, synced items, latest audit events (recorded: admin_show).")
        @Argument(help: UserArgument.help) var user: String
        @OptionGroup var output: Output

        func run() throws {
            let export = try withAdminUseCases { admin in
                try admin.show(userID: try UserArgument.userID(user, admin), by: OperatorEnvironment.operatorName())
            }
            guard let export else { throw CommandFailure("no user \(user)") }
            print(output.json ? AccountExportJSON.json(export) : AdminText.describe(export))
        }
    }

    struct Disable: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable a user: every session ends now, sign-in answers 403 user_disabled; nothing is deleted.")
        @Argument(help: UserArgument.help) var user: String
        @Option(help: "Why, kept with the user and in the audit event.") var reason: String?

        func run() throws {
            let (userID, ended) = try withAdminUseCases { admin in
                let userID = try UserArgument.userID(user, admin)
                return (userID, try admin.disableUser(userID, reason: reason, by: OperatorEnvironment.operatorName()))
            }
            guard let ended else { throw CommandFailure("no user \(user)") }
            print("disabled user \(userID); \(ended.count) session(s) ended")
        }
    }

    struct Enable: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enable a disabled user again: they can sign in.")
        @Argument(help: UserArgument.help) var user: String

        func run() throws {
            let (userID, enabled) = try withAdminUseCases { admin in
                let userID = try UserArgument.userID(user, admin)
                return (userID, try admin.enableUser(userID, by: OperatorEnvironment.operatorName()))
            }
            guard enabled else { throw CommandFailure("no user \(user)") }
            print("enabled user \(userID)")
        }
    }

    struct RevokeSession: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End one active session, whoever's it is.")
        @Argument(help: "The session id (siwa admin show lists them).") var session: UInt64

        func run() throws {
            guard try withAdminUseCases({ try $0.revokeSession(session, by: OperatorEnvironment.operatorName()) }) else {
                throw CommandFailure("no active session \(session)")
            }
            print("revoked session \(session)")
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete a user and everything theirs, as DELETE /auth/account does.",
            discussion: """
                Every session ends at once; Apple's refresh tokens are queued for revocation at Apple (sent by \
                `siwa jobs`); the app's backend gets `user.deleted` with source `operator`.
                """)
        @Argument(help: UserArgument.help) var user: String

        func run() throws {
            let (userID, deleted) = try withAdminUseCases { admin in
                let userID = try UserArgument.userID(user, admin)
                return (userID, try admin.deleteUser(userID, by: OperatorEnvironment.operatorName()))
            }
            guard deleted else { throw CommandFailure("no user \(user)") }
            print("deleted user \(userID)")
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Everything stored about a user as JSON, as GET /auth/account/export gives it (no token, no hash); recorded: admin_export.")
        @Argument(help: UserArgument.help) var user: String
        @Option(
            name: .shortAndLong,
            help: "Write to this file (mode 0600; relative to the current directory; owned by whoever ran sudo) instead of standard output."
        )
        var output: String?

        func run() throws {
            // Opened first, with the caller's rights and in the caller's directory, before a
            // `sudo siwa` takes the service user's.
            let file = try output.map { try OutputFile(creating: $0) }
            let found: AccountExport?
            do {
                found = try withAdminUseCases { admin in
                    try admin.exportUser(userID: try UserArgument.userID(user, admin), by: OperatorEnvironment.operatorName())
                }
            } catch {
                file?.discard()
                throw error
            }
            guard let export = found else {
                file?.discard()
                throw CommandFailure("no user \(user)")
            }
            let json = AccountExportJSON.json(export) + "\n"
            guard let file else { return print(json, terminator: "") }
            try file.write(json)
            print("wrote \(file.path)")
        }
    }

    struct Audit: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The latest audit events, of one user or of everyone; --follow for new ones.")
        @Option(help: "Only this user's events: their id (also of a deleted user), Apple sub, or an email or relay address.")
        var user: String?
        @Option(help: "How many of the latest events.") var limit = 20
        @Flag(help: "Keep printing new events (every second) until interrupted.") var follow = false
        @OptionGroup var output: Output

        func run() throws {
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1...10000") }
            try withAdminUseCases { admin in
                // A deleted user's events stay: an id is taken as it is, not looked up.
                let user = try user.map { reference in try UInt64(reference) ?? UserArgument.userID(reference, admin) }
                let latest = try admin.auditEvents(userID: user, limit: limit).reversed()
                print(latest)
                fflush(nil)
                var last = latest.last?.id
                while follow {
                    Thread.sleep(forTimeInterval: 1)
                    let events = try admin.auditEvents(userID: user, afterID: last ?? 0, limit: 1000).reversed()
                    print(Array(events))
                    // Each event as it comes, also into a pipe.
                    fflush(nil)
                    last = events.last?.id ?? last
                }
            }
        }

        private func print(_ events: some Collection<UserRecord.AuditEvent>) {
            for event in events {
                Swift.print(
                    output.json
                        ? AccountExportJSON.json(event)
                        : "\(AdminText.time(event.occurredAt))  #\(event.id)  \(event.type)  user \(event.userID.map(String.init) ?? "-")  "
                            + "session \(event.sessionID.map(String.init) ?? "-")  \(event.remoteAddress ?? "-")  \(event.detail ?? "")")
            }
        }
    }
}

/// The user argument of `siwa admin`'s commands: an id, an Apple `sub`, or an email or relay address.
enum UserArgument {
    static let help: ArgumentHelp = "The user: their id, Apple sub, or an email address of theirs (a private relay address among them)."

    /// The id of the one user `reference` names.
    /// - Throws: `CommandFailure` (exit status 1) when it names no user, or several.
    static func userID(_ reference: String, _ admin: AdminUseCases) throws -> UInt64 {
        switch try admin.lookUpUser(reference) {
        case .one(let userID):
            return userID
        case .none:
            throw CommandFailure("no user \(reference)")
        case .several(let userIDs):
            throw CommandFailure(
                "\(reference) names \(userIDs.count) users (\(userIDs.map(String.init).joined(separator: ", "))): give the user id instead")
        }
    }
}

/// A command that could not do what it was asked (no such user, a file it cannot write): its
/// message on standard error, exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with the operator's use cases on one worker context, as `siwa serve`'s workers have theirs.
func withAdminUseCases<T>(_ body: (AdminUseCases) throws -> T) throws -> T {
    let config = try loadConfiguration()
    let logger = config.bootstrapLogging(label: "siwa-admin")
    initializeMariaDBLibrary()
    let core = IdentityCore(apple: nil, sessions: nil, database: config.database, webhooks: config.webhooks)
    let context = WorkerContext(core: core, database: config.database, logger: logger)
    defer {
        context.close()
        core.stop()
    }
    do {
        return try body(AdminUseCases(context: context))
    } catch let failure as CommandFailure {
        throw failure
    } catch let error as MariaDBError {
        // An operator's terminal: the library's message (values redacted), and the likely fix of a
        // missing column or table.
        let hint = [1054, 1146].contains(error.errno) ? " (is the schema current? siwa migrate)" : ""
        FileHandle.standardError.write(Data("database: \(error.debugDescription)\(hint)\n".utf8))
        throw ExitCode(1)
    }
}
