import Accounts
import AppleID
import ArgumentParser
import Foundation
import HTTPClient
import Identity
import MariaDB
import SiwaConfig
import SyncRules

#if canImport(Glibc)
    import Glibc
#endif

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check what a production server needs, one line per check with the fix; exit 0 only when all pass.",
        discussion: """
            The configuration; the database and its migrations; the socket nginx uses; the key files; \
            Apple: reachable, the client secret accepted for each client id (a token request with a \
            deliberately invalid code: invalid_grant means the secret is good), the clock against Apple's; \
            the public URL's TLS certificate; Apple's domain-association file, served as configured, or \
            not needed; the declared sync collections, and stored ones no longer declared.
            """)

    @Option(help: "The user nginx's workers run as.") var nginxUser = "www-data"
    @Option(
        help: """
            CA certificates (PEM) trusted for the public URL's TLS, for a private or self-signed CA such as a staging \
            host's (default: the system's).
            """)
    var publicCAFile: String?
    @Option(help: "Hosts that run siwa serve and siwa jobs with this configuration on this database (counted in its connections).")
    var hosts = 1

    func run() throws {
        try OperatorEnvironment.adopt()
        var report = DoctorReport()
        let config: AppConfig
        do {
            config = try AppConfig(environment: ProcessInfo.processInfo.environment)
            report.pass("configuration", "every SIWA_* key is valid")
        } catch let error as ConfigurationError {
            report.fail("configuration", error.problems.joined(separator: "; "), fix: "edit /etc/siwa/siwa.env; siwa config shows it")
            report.finish()
        }
        initializeMariaDBLibrary()
        initializeHTTPClientLibrary()
        checkDatabase(config, &report)
        checkSocket(config, &report)
        checkKeys(config, &report)
        if let apple = config.apple { checkApple(apple, &report) } else { report.fail("apple", "not configured", fix: "set SIWA_APPLE_*") }
        checkPublicURL(config, &report)
        checkDomainAssociation(config, &report)
        checkSyncCollections(config, &report)
        checkConnections(config, &report)
        report.finish()
    }

    func checkDatabase(_ config: AppConfig, _ report: inout DoctorReport) {
        let connection = Connection(configuration: config.database)
        defer { connection.close() }
        do {
            let migrator = try Migrator(directory: config.migrationsDirectory)
            let applied = try migrator.applied(on: connection)
            try migrator.verify(applied: applied)
            let pending = migrator.migrations.filter { applied[$0.version] == nil }
            if pending.isEmpty {
                report.pass("database", "reachable; all \(migrator.migrations.count) migrations applied")
            } else {
                report.fail("database", "\(pending.count) migrations pending (\(pending[0].fileName) first)", fix: "siwa migrate")
            }
        } catch {
            report.fail("database", "\(error)", fix: "check SIWA_DB_* and that MariaDB runs; siwa setup prints the SQL that creates it")
        }
    }

    /// The declaration was checked with the configuration; this names what it declares, and what
    /// the database holds of collections it no longer declares (kept, not synced).
    func checkSyncCollections(_ config: AppConfig, _ report: inout DoctorReport) {
        let declared = config.syncSchema.collections.map(\.name)
        let connection = Connection(configuration: config.database)
        defer { connection.close() }
        do {
            // The built-in collections' records (lessons, achievements, profiles) are always synced.
            let builtIn = SyncSchema.builtIn.collections.map(\.name)
            let undeclared = try SyncRecords.storedCollections(on: connection).filter { !declared.contains($0) && !builtIn.contains($0) }
            let names = declared.isEmpty ? "none declared (the built-in model only)" : declared.joined(separator: ", ")
            guard undeclared.isEmpty else {
                let listed = undeclared.joined(separator: ", ")
                report.fail(
                    "sync collections", "\(names); stored but no longer declared: \(listed)",
                    fix: "declare them again in SIWA_SYNC_COLLECTIONS (their records are kept, not synced)")
                return
            }
            report.pass("sync collections", names)
        } catch {
            report.fail("sync collections", "\(error)", fix: "check SIWA_DB_* and that MariaDB runs")
        }
    }

    /// The connections `siwa serve` and `siwa jobs` hold at most on each of `hosts`, with two
    /// commands' (`siwa admin`, `siwa migrate`), against the server's `max_connections`: past it,
    /// requests fail with 503.
    func checkConnections(_ config: AppConfig, _ report: inout DoctorReport) {
        let nodes = config.database.endpoints.count
        let serve = DatabaseConnections.serve(workerThreads: config.workerThreads, databaseNodes: nodes)
        let jobs = DatabaseConnections.jobs(
            webhookEndpoints: config.webhooks?.endpoints.count ?? 0, validationLanes: config.apple?.validationPace.lanes ?? 0,
            databaseNodes: nodes)
        let needed = (serve + jobs) * max(hosts, 1) + 2
        let connection = Connection(configuration: config.database)
        defer { connection.close() }
        do {
            let limit: Int64 = try connection.query("SELECT @@max_connections AS max_connections")[0].decode(column: "max_connections")
            let perHost = hosts > 1 ? ", on each of \(hosts) hosts" : ""
            let detail = "siwa serve \(serve), siwa jobs \(jobs)\(perHost), commands 2: \(needed) of MariaDB's max_connections \(limit)"
            if Int64(needed) <= limit {
                report.pass("database connections", detail)
            } else {
                report.fail(
                    "database connections", detail + " (a connection refused for their number fails its request with 503)",
                    fix: "raise max_connections in MariaDB's configuration to at least \(needed) ([mysqld] max_connections = \(needed)), "
                        + "or lower SIWA_WORKER_THREADS (two connections each) or SIWA_APPLE_VALIDATION_LANES (one each)")
            }
        } catch {
            report.fail("database connections", "\(error)", fix: "check SIWA_DB_* and that MariaDB runs")
        }
    }

    func checkSocket(_ config: AppConfig, _ report: inout DoctorReport) {
        var status = stat()
        guard stat(config.socketPath, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else {
            report.fail(
                "socket", "\(config.socketPath) does not exist", fix: "systemctl start siwa (journalctl -u siwa says why it stopped)")
            return
        }
        guard let nginx = getpwnam(nginxUser) else {
            report.fail("socket", "no user \(nginxUser)", fix: "--nginx-user: the user of nginx's `user` directive")
            return
        }
        let uid = nginx.pointee.pw_uid
        var groups = [gid_t](repeating: 0, count: 64)
        var count = Int32(groups.count)
        _ = getgrouplist(nginxUser, nginx.pointee.pw_gid, &groups, &count)
        let inGroup = groups.prefix(Int(max(0, count))).contains(status.st_gid)
        let mode = status.st_mode & 0o777
        let usable =
            uid == 0 || (status.st_uid == uid && mode & 0o600 == 0o600) || (inGroup && mode & 0o060 == 0o060) || mode & 0o006 == 0o006
        if usable {
            report.pass("socket", "\(config.socketPath) (mode \(String(mode, radix: 8))) is usable by \(nginxUser)")
        } else {
            report.fail(
                "socket", "\(nginxUser) cannot connect to \(config.socketPath) (mode \(String(mode, radix: 8)))",
                fix: "run siwa with Group= a group of \(nginxUser) (the unit uses www-data) and SIWA_SOCKET_MODE=0660")
        }
    }

    func checkKeys(_ config: AppConfig, _ report: inout DoctorReport) {
        let environment = ProcessInfo.processInfo.environment
        guard let directory = environment["SIWA_ACCESS_KEYS_DIR"], let keys = try? AccessTokenKeyFiles.load(directory), !keys.isEmpty
        else {
            report.fail("keys", "no access-token key", fix: "runuser -u siwa -- siwa keys rotate")
            return
        }
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let open = files.filter { name in
            var status = stat()
            return stat(directory + "/" + name, &status) == 0 && status.st_mode & 0o077 != 0
        }
        guard open.isEmpty else {
            report.fail("keys", "readable by others than siwa: \(open.joined(separator: ", "))", fix: "chmod 0600 \(directory)/*.pem")
            return
        }
        var status = stat()
        let newest =
            files.compactMap { name -> Double? in
                stat(directory + "/" + name, &status) == 0 ? Double(status.st_mtim.tv_sec) : nil
            }.max() ?? 0
        let days = Int((Date().timeIntervalSince1970 - newest) / 86_400)
        if days > 180 {
            report.fail("keys", "the signing key is \(days) days old", fix: "runuser -u siwa -- siwa keys rotate (twice a year at least)")
        } else {
            report.pass(
                "keys",
                "\(keys.count) access-token key(s), the newest \(days) days old, mode 0600; data keys and .p8 not readable by others")
        }
    }

    func checkApple(_ settings: AppleSettings, _ report: inout DoctorReport) {
        let http = HTTPClient(configuration: settings.http)
        do {
            let response = try http.send(HTTPRequest(method: "GET", url: settings.baseURL + "/auth/keys"))
            guard response.status == 200, let keys = try? AppleKeySet.parse(response.body), !keys.isEmpty else {
                report.fail("apple keys", "\(settings.baseURL)/auth/keys answered \(response.status)", fix: "check SIWA_APPLE_BASE_URL")
                return
            }
            report.pass("apple keys", "\(settings.baseURL) reachable, \(keys.count) signing keys")
            if let date = response.header("Date").flatMap(Doctor.httpDate) {
                let skew = Date().timeIntervalSince(date)
                if abs(skew) <= 30 {
                    report.pass("clock", String(format: "%.0f s from Apple's", skew))
                } else {
                    report.fail(
                        "clock", String(format: "%.0f s from Apple's", skew), fix: "run an NTP client (systemd-timesyncd or chrony)")
                }
            } else {
                report.fail("clock", "Apple's answer had no Date header to compare with", fix: "check SIWA_APPLE_BASE_URL")
            }
        } catch {
            report.fail("apple keys", "\(settings.baseURL) unreachable: \(error)", fix: "allow outgoing HTTPS to appleid.apple.com")
            return
        }
        let client = AppleServices(settings: settings).makeClient()
        for clientID in settings.clientIDs.sorted() {
            do {
                _ = try client.exchangeCode("siwa-doctor-invalid-code", clientID: clientID, redirectURI: nil)
                report.fail("client secret", "\(clientID): Apple accepted an invalid code", fix: "check SIWA_APPLE_BASE_URL")
            } catch let error as AppleAPIError where error.code == .invalidGrant {
                report.pass("client secret", "\(clientID): accepted (an invalid code got invalid_grant)")
            } catch let error as AppleAPIError where error.code == .invalidClient {
                report.fail(
                    "client secret", "\(clientID): Apple answered invalid_client",
                    fix: "check SIWA_APPLE_TEAM_ID, SIWA_APPLE_KEY_ID, the .p8, and that the key is enabled for Sign in with Apple "
                        + "with this App ID or Services ID")
            } catch {
                report.fail("client secret", "\(clientID): \(error)", fix: "check that Apple is reachable")
            }
        }
    }

    /// Apple's current registration of a web domain needs no file: without
    /// SIWA_DOMAIN_ASSOCIATION_FILE there is nothing to check. With one, the public URL must serve
    /// exactly that file.
    func checkDomainAssociation(_ config: AppConfig, _ report: inout DoctorReport) {
        guard let association = config.domainAssociation else {
            report.pass(
                "domain association", "not needed (Apple's current registration); SIWA_DOMAIN_ASSOCIATION_FILE if Apple asks for one")
            return
        }
        guard let url = config.sessions?.publicURL else { return }
        let http = publicClient()
        do {
            let response = try http.send(HTTPRequest(method: "GET", url: url + DomainAssociation.urlPath))
            if response.status == 200 && response.body == association.contents {
                report.pass("domain association", "\(url)\(DomainAssociation.urlPath) serves \(association.path)")
            } else {
                report.fail(
                    "domain association", "\(url)\(DomainAssociation.urlPath) answered \(response.status), not \(association.path)",
                    fix: "systemctl restart siwa (it reads the file at start); the nginx site must include siwa-locations.conf")
            }
        } catch {
            report.fail("domain association", "\(url): \(error)", fix: "see the public URL's check")
        }
    }

    /// A client of the public URL, trusting `--public-ca-file` (or the system's CAs).
    func publicClient() -> HTTPClient {
        HTTPClient(configuration: HTTPClientConfiguration(connectTimeout: 5, timeout: 10, caFile: publicCAFile))
    }

    func checkPublicURL(_ config: AppConfig, _ report: inout DoctorReport) {
        guard let url = config.sessions?.publicURL else {
            report.fail("public URL", "SIWA_PUBLIC_URL is not set", fix: "siwa setup --public-url https://...")
            return
        }
        let http = publicClient()
        do {
            let response = try http.send(HTTPRequest(method: "GET", url: url + "/health"))
            if response.status == 200 {
                report.pass("public URL", "\(url)/health answers 200 over verified TLS")
            } else {
                report.fail("public URL", "\(url)/health answered \(response.status)", fix: "check nginx's site and that siwa runs")
            }
        } catch {
            let trust =
                if let publicCAFile {
                    "a certificate for the domain signed by \(publicCAFile) (--public-ca-file), or by a CA the system trusts"
                } else {
                    "a certificate for the domain that the system trusts (certbot --nginx); for a private or self-signed CA, "
                        + "siwa doctor --public-ca-file CA.pem trusts that CA's certificate"
                }
            report.fail("public URL", "\(url): \(error)", fix: trust + "; and nginx running")
        }
    }

    /// An HTTP `Date` header (RFC 9110: `Sun, 06 Nov 1994 08:49:37 GMT`).
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}

/// The doctor's lines and verdict.
struct DoctorReport {
    private var failed = 0

    mutating func pass(_ check: String, _ detail: String) {
        print("ok    \(check): \(detail)")
    }

    mutating func fail(_ check: String, _ detail: String, fix: String) {
        failed += 1
        print("FAIL  \(check): \(detail)\n      fix: \(fix)")
    }

    /// Prints the verdict and exits: 0 when every check passed.
    func finish() -> Never {
        print(failed == 0 ? "\nevery check passed" : "\n\(failed) check(s) failed")
        Doctor.exit(withError: failed == 0 ? nil : ExitCode(1))
    }
}
