import Accounts
import ArgumentParser
import Foundation
import Identity
import MariaDB
import SiwaConfig

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apply the pending sql/NNNN_name.sql migrations, once each, in order.")

    @Option(help: "Directory of the migration files (default: SIWA_MIGRATIONS_DIR).")
    var dir: String?

    @Flag(help: "Only list the migrations and whether each is applied.")
    var status = false

    func run() throws {
        let config = try loadConfiguration()
        initializeMariaDBLibrary()
        var database = config.database
        database.allowsMultipleStatements = true
        // A migration's statement may take long on a large table; the run waits for it rather than
        // giving up while the server goes on running it (`MigrationRunner.migrationReadTimeout`).
        database.readWriteTimeout = MigrationRunner.migrationReadTimeout
        let connection = Connection(configuration: database)
        defer { connection.close() }
        let migrator = try Migrator(directory: dir ?? config.migrationsDirectory)
        if status {
            let applied = try migrator.applied(on: connection)
            for migration in migrator.migrations {
                print("\(applied[migration.version] == nil ? "pending" : "applied") \(migration.fileName)")
            }
            try migrator.verify(applied: applied)
            return
        }
        // Each line as it happens (a pipe would hold them until the end): what a run that is
        // stopped got to.
        let done = try MigrationRunner(migrator).migrate(on: connection) {
            print($0)
            fflush(nil)
        }
        print(done.isEmpty ? "up to date (\(migrator.migrations.count) migrations)" : "applied \(done.count) migration(s)")
    }
}
