import Foundation
import HTTPClient
import Identity
import JOSE
import MariaDB
import SiwaConfig
import SyncRules
import Testing

@Suite struct AppConfigTests {
    static let minimal = ["SIWA_DB_SOCKET": "/run/mysqld/mysqld.sock", "SIWA_DB_NAME": "siwa", "SIWA_DB_USER": "siwa"]

    /// The minimal environment with a whole Apple key (team, key id, the `.p8` at `key`) and `more`.
    static func apple(key: String, _ more: [String: String]) -> [String: String] {
        minimal.merging(["SIWA_APPLE_TEAM_ID": "TEAM123456", "SIWA_APPLE_KEY_ID": "KEY1234567", "SIWA_APPLE_PRIVATE_KEY_FILE": key]) { $1 }
            .merging(more) { $1 }
    }

    @Test("Defaults apply when only the required keys are set")
    func defaults() throws {
        let config = try AppConfig(environment: Self.minimal)
        #expect(config.socketPath == "/run/siwa/siwa.sock")
        #expect(config.socketMode == 0o660)
        #expect(config.workerThreads == 64)
        #expect(config.maxBodyBytes == 1_048_576)
        #expect(config.database.endpoint == .unixSocket(path: "/run/mysqld/mysqld.sock"))
        #expect(config.database.password == nil)
    }

    @Test("SIWA_DB_HOST lists a cluster's nodes in order (causal reads on by default), and refuses a bad or repeated one")
    func databaseHosts() throws {
        var environment = [
            "SIWA_DB_NAME": "siwa", "SIWA_DB_USER": "siwa", "SIWA_DB_HOST": "db1, db2:3307,10.0.0.3", "SIWA_DB_PORT": "3310",
        ]
        let cluster = try AppConfig(environment: environment).database
        #expect(cluster.endpoints == [.tcp(host: "db1", port: 3310), .tcp(host: "db2", port: 3307), .tcp(host: "10.0.0.3", port: 3310)])
        #expect(cluster.syncWait == 15)
        environment["SIWA_DB_SYNC_WAIT"] = "0"
        #expect(try AppConfig(environment: environment).database.syncWait == 0)
        #expect(try AppConfig(environment: Self.minimal).database.syncWait == 0)
        for bad in ["db1,db1", "db1,", "db1:x", "db1:70000"] {
            environment["SIWA_DB_HOST"] = bad
            #expect(throws: ConfigurationError.self, "\(bad)") { try AppConfig(environment: environment) }
        }
    }

    @Test("Every problem is named in one error")
    func allProblemsAtOnce() {
        let environment = [
            "SIWA_WORKER_THREADS": "0", "SIWA_SOCKET_MODE": "rw-rw----", "SIWA_DB_SOCKET": "/s",
            "SIWA_DB_HOST": "db", "SIWA_LOG_LEVEL": "loud", "SIWA_DB_PORTT": "3306", "PATH": "/bin",
        ]
        do {
            _ = try AppConfig(environment: environment)
            Issue.record("expected a ConfigurationError")
        } catch let error as ConfigurationError {
            let text = error.description
            for key in [
                "SIWA_WORKER_THREADS", "SIWA_SOCKET_MODE", "SIWA_DB_SOCKET and SIWA_DB_HOST", "SIWA_LOG_LEVEL",
                "SIWA_DB_PORTT: unknown key", "SIWA_DB_USER: required", "SIWA_DB_NAME: required",
            ] {
                #expect(text.contains(key), "missing \(key) in \(text)")
            }
            #expect(!text.contains("PATH"))
            #expect(error.problems.count == 7)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("A secret is read from its file, without the trailing newline, and never printed")
    func secretFromFile() throws {
        let path = try temporaryFile(contents: "s3cret\n", mode: 0o600)
        let config = try AppConfig(environment: Self.minimal.merging(["SIWA_DB_PASSWORD_FILE": path]) { $1 })
        #expect(config.database.password == "s3cret")
        #expect(Secret("s3cret").description == "<redacted>")
        #expect("\(Secret("s3cret"))" == "<redacted>")
        let summary = config.redactedSummary(environment: Self.minimal.merging(["SIWA_DB_PASSWORD_FILE": path]) { $1 })
        #expect(!summary.contains("s3cret"))
    }

    @Test("SIWA_SYNC_COLLECTIONS: the declaration is read at start; a bad one is refused with each problem named by its path")
    func syncCollections() throws {
        let example = #filePath.replacingOccurrences(
            of: "Tests/SiwaConfigTests/AppConfigTests.swift", with: "examples/sync/collections.json")
        let config = try AppConfig(environment: Self.minimal.merging(["SIWA_SYNC_COLLECTIONS": example]) { $1 })
        #expect(config.syncSchema.collections.map(\.name) == ["workouts", "favourites"])
        #expect(try AppConfig(environment: Self.minimal).syncSchema.collections.isEmpty)
        let bad = try temporaryFile(
            contents:
                #"{"collections": {"w": {"key": ["id"], "fields": {"n": {"type": "integer", "merge": "newest"}}, "limits": {"itemsPerRequest": 0}}}}"#,
            mode: 0o644)
        do {
            _ = try AppConfig(environment: Self.minimal.merging(["SIWA_SYNC_COLLECTIONS": bad, "SIWA_DB_NAME": ""]) { $1 })
            Issue.record("a bad declaration was accepted")
        } catch let error as ConfigurationError {
            let problems = error.problems.filter { $0.hasPrefix("SIWA_SYNC_COLLECTIONS") }
            #expect(
                problems == [
                    #"SIWA_SYNC_COLLECTIONS: \#(bad): collections.w.key: names "id", which is not one of its fields"#,
                    #"SIWA_SYNC_COLLECTIONS: \#(bad): collections.w.fields.n.merge: "newest" is not a merge rule (one of maximum, minimum, earliest, latest, forward, union, latestWins, counter, stickyTrue, withLatest)"#,
                    "SIWA_SYNC_COLLECTIONS: \(bad): collections.w.limits.itemsPerRequest: must be an integer from 1 to 500",
                ], "\(problems)")
        }
        #expect(throws: ConfigurationError.self) {
            try AppConfig(environment: Self.minimal.merging(["SIWA_SYNC_COLLECTIONS": "/nonexistent/collections.json"]) { $1 })
        }
    }

    @Test("A secret file readable by other users is refused")
    func worldReadableSecret() throws {
        let path = try temporaryFile(contents: "s3cret", mode: 0o644)
        #expect(throws: ConfigurationError.self) {
            try AppConfig(environment: Self.minimal.merging(["SIWA_DB_PASSWORD_FILE": path]) { $1 })
        }
    }

    @Test("The table of docs/CONFIGURATION.md is the key table, as `siwa config --markdown` prints it")
    func configurationPageIsGenerated() throws {
        let page = try String(
            contentsOfFile: #filePath.replacingOccurrences(of: "Tests/SiwaConfigTests/AppConfigTests.swift", with: "docs/CONFIGURATION.md"),
            encoding: .utf8
        )
        let start = try #require(page.range(of: "| Key | Type |"))
        let end = page[start.lowerBound...].range(of: "\n\n")?.lowerBound ?? page.endIndex
        let table = String(page[start.lowerBound..<end]) + "\n"
        #expect(
            table == AppConfig.markdownTable,
            "docs/CONFIGURATION.md's table differs from the key table: replace it with `siwa config --markdown`")
        #expect(
            AppConfig.markdownTable.contains("| `SIWA_DB_PASSWORD_FILE` | path | none | no | yes | file holding the database password |"))
    }

    @Test("The example has every key, commented, with its default, and says which are required, in plain text")
    func example() {
        let example = AppConfig.example
        for key in AppConfig.keys { #expect(example.contains("\n#\(key.name)=\(key.defaultValue ?? "")\n")) }
        #expect(example.contains("# database user (string, required: yes)\n#SIWA_DB_USER=\n"))
        #expect(example.contains("(see SCALING.md)"))
        let keyLines = example[(example.range(of: "\n\n")?.upperBound ?? example.startIndex)...]
        #expect(!keyLines.contains("`") && !keyLines.contains("]("))
    }

    @Test("A configuration built from a database alone has every other key at its default")
    func builtDirectly() throws {
        let database = MariaDB.Configuration(endpoint: .unixSocket(path: "/tmp/db.sock"), user: "app", database: "appdb")
        let built = AppConfig(database: database)
        let read = try AppConfig(environment: Self.minimal)
        #expect(built.database.user == "app" && built.database.database == "appdb")
        #expect(built.workerThreads == read.workerThreads && built.socketPath == read.socketPath)
        #expect(built.maxBodyBytes == read.maxBodyBytes && built.logLevel == read.logLevel && built.metricsEnabled == read.metricsEnabled)
        #expect(built.apple == nil && built.sessions == nil && built.webhooks == nil)
    }

    @Test("Apple settings load the .p8 key and collect the client ids; without any SIWA_APPLE_ key they are absent")
    func appleSettings() throws {
        #expect(try AppConfig(environment: Self.minimal).apple == nil)
        let key = try temporaryFile(contents: try P256PrivateKey().pem(), mode: 0o600)
        let config = try AppConfig(
            environment: Self.apple(
                key: key,
                [
                    "SIWA_APPLE_BUNDLE_IDS": "com.example.app, com.example.app.watch", "SIWA_APPLE_SERVICES_ID": "com.example.web",
                ]))
        let apple = try #require(config.apple)
        #expect(apple.clientIDs == ["com.example.app", "com.example.app.watch", "com.example.web"])
        #expect(apple.baseURL == "https://appleid.apple.com")
        #expect(apple.leeway == 60)
        #expect(apple.requireNonce)
        #expect(apple.relayDomains == ["privaterelay.appleid.com", "private.icloud.com"])
        let custom = try AppConfig(
            environment: Self.apple(
                key: key,
                [
                    "SIWA_APPLE_BUNDLE_IDS": "com.example.app", "SIWA_APPLE_RELAY_DOMAINS": " Relay.Example , other.example",
                ]))
        #expect(custom.apple?.relayDomains == ["relay.example", "other.example"])
        #expect(throws: (any Error).self) {
            try AppConfig(
                environment: Self.apple(
                    key: key,
                    [
                        "SIWA_APPLE_BUNDLE_IDS": "com.example.app", "SIWA_APPLE_RELAY_DOMAINS": "user@relay.example",
                    ]))
        }
    }

    @Test("Partial or wrong Apple settings are each named")
    func appleProblems() throws {
        let notAKey = try temporaryFile(contents: "not a key", mode: 0o600)
        do {
            _ = try AppConfig(
                environment: Self.minimal.merging([
                    "SIWA_APPLE_TEAM_ID": "team", "SIWA_APPLE_PRIVATE_KEY_FILE": notAKey,
                    "SIWA_APPLE_BASE_URL": "http://apple.example.com", "SIWA_APPLE_LEEWAY": "300",
                ]) { $1 })
            Issue.record("expected a ConfigurationError")
        } catch let error as ConfigurationError {
            for text in [
                "SIWA_APPLE_TEAM_ID: expected 10", "SIWA_APPLE_KEY_ID: required", "SIWA_APPLE_PRIVATE_KEY_FILE: not a P-256",
                "SIWA_APPLE_BUNDLE_IDS or SIWA_APPLE_SERVICES_ID", "SIWA_APPLE_BASE_URL: must be https", "SIWA_APPLE_LEEWAY",
            ] {
                #expect(error.description.contains(text), "missing \(text) in \(error)")
            }
        }
        // http is allowed to a loopback address only (the emulator).
        let key = try temporaryFile(contents: try P256PrivateKey().pem(), mode: 0o600)
        let local = try AppConfig(
            environment: Self.apple(
                key: key,
                [
                    "SIWA_APPLE_SERVICES_ID": "com.example.web", "SIWA_APPLE_BASE_URL": "http://127.0.0.1:9999",
                ]))
        #expect(local.apple?.baseURL == "http://127.0.0.1:9999")
    }

    @Test("Other platforms' settings: each bad redirect URI, app callback and app client is named; valid ones load")
    func otherPlatforms() throws {
        let key = try temporaryFile(contents: try P256PrivateKey().pem(), mode: 0o600)
        let bad = Self.apple(
            key: key,
            [
                "SIWA_APPLE_BUNDLE_IDS": "com.example.ios",
                "SIWA_APPLE_REDIRECT_URIS": "com.example.app=http://example.com/cb,com.example.ios=https://example.com/cb,nopair",
                "SIWA_APPLE_APP_CALLBACKS": "flutter=intent:notapackage,web=http://example.com/x,js=javascript:alert(1),Bad=com.example:/a",
                "SIWA_APP_CLIENTS": "desktop=http://localhost:8000/cb,tv=https://example.com/#x",
            ])
        let error = try #require(throws: ConfigurationError.self) { try AppConfig(environment: bad) }
        for named in [
            "com.example.app's URL must be https", "com.example.ios is a bundle id", "expected SERVICES_ID=https://..., got nopair",
            "flutter's target", "web's target", "js's target", "NAME of a-z",
            "SIWA_APP_CLIENTS: the apps sign in through Apple's web authorization, which needs SIWA_APPLE_SERVICES_ID",
            "SIWA_APP_CLIENTS: the apps get sessions",
        ] {
            #expect(error.description.contains(named), "missing \(named) in \(error.description)")
        }
        let good = try AppConfig(
            environment: Self.apple(
                key: key,
                [
                    "SIWA_APPLE_SERVICES_ID": "com.example.web",
                    "SIWA_APPLE_REDIRECT_URIS": "com.example.app=https://example.com/spa/,com.example.app=https://example.com/cb",
                    "SIWA_APPLE_APP_CALLBACKS": "flutter=intent:com.example.app,links=https://app.example.com/apple",
                ]))
        #expect(good.apple?.redirectURIs["com.example.app"] == ["https://example.com/spa/", "https://example.com/cb"])
        #expect(good.apple?.clientIDs == ["com.example.web", "com.example.app"])
        #expect(good.apple?.appCallbacks["flutter"] == .androidIntent(package: "com.example.app"))
    }

    @Test("Session settings: every problem named at once; a world-readable data key file is refused; valid ones load")
    func sessionSettings() throws {
        #expect(try AppConfig(environment: Self.minimal).sessions == nil)
        let emptyDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: emptyDirectory, withIntermediateDirectories: false)
        let readable = try temporaryFile(contents: "k1 \(Data(count: 32).base64EncodedString())", mode: 0o644)
        let error = try #require(throws: ConfigurationError.self) {
            try AppConfig(
                environment: Self.minimal.merging([
                    "SIWA_PUBLIC_URL": "https://example.com/path", "SIWA_ACCESS_KEYS_DIR": emptyDirectory,
                    "SIWA_DATA_KEYS_FILE": readable, "SIWA_SESSION_LIFETIME": "10",
                ]) { $1 })
        }
        let text = error.description
        for key in ["SIWA_PUBLIC_URL", "SIWA_ACCESS_KEYS_DIR", "SIWA_DATA_KEYS_FILE", "SIWA_SESSION_LIFETIME"] {
            #expect(text.contains(key), "\(key) not named in: \(text)")
        }
        #expect(!text.contains(Data(count: 32).base64EncodedString()), "the key itself is never printed")

        _ = try AccessTokenKeyFiles.add(.es256, to: emptyDirectory, now: Date())
        let keys = try temporaryFile(contents: "k1 \(Data(count: 32).base64EncodedString())\n", mode: 0o600)
        let config = try AppConfig(
            environment: Self.minimal.merging([
                "SIWA_PUBLIC_URL": "https://auth.example.com/", "SIWA_ACCESS_KEYS_DIR": emptyDirectory, "SIWA_DATA_KEYS_FILE": keys,
            ]) { $1 })
        let sessions = try #require(config.sessions)
        #expect(sessions.publicURL == "https://auth.example.com" && sessions.callbackURL == "https://auth.example.com/auth/callback")
        #expect(sessions.lifetime == 7_776_000 && sessions.dataKeys.currentKeyID == "k1")
        // Guest accounts and linking are off unless turned on; a link secret needs 32 characters.
        #expect(!sessions.guestAccounts && sessions.guestRetentionDays == 30 && sessions.linkSecrets.isEmpty)
        #expect(sessions.linkTokenLifetime == 600)
        let base = [
            "SIWA_PUBLIC_URL": "https://auth.example.com", "SIWA_ACCESS_KEYS_DIR": emptyDirectory, "SIWA_DATA_KEYS_FILE": keys,
        ]
        let link = try temporaryFile(contents: String(repeating: "l", count: 32) + "\n", mode: 0o600)
        let on = try #require(
            try AppConfig(
                environment: Self.minimal.merging(base) { $1 }.merging([
                    "SIWA_GUEST_ACCOUNTS": "true", "SIWA_GUEST_RETENTION_DAYS": "7", "SIWA_LINK_SECRET_FILE": link,
                ]) { $1 }
            ).sessions)
        #expect(on.guestAccounts && on.guestRetentionDays == 7 && on.linkSecrets.map(\.count) == [32])
        let shortLink = try temporaryFile(contents: "short\n", mode: 0o600)
        for extra in [["SIWA_LINK_SECRET_FILE": shortLink], ["SIWA_GUEST_RETENTION_DAYS": "0"], ["SIWA_LINK_TOKEN_LIFETIME": "5"]] {
            #expect(throws: ConfigurationError.self, "\(extra)") {
                try AppConfig(environment: Self.minimal.merging(base) { $1 }.merging(extra) { $1 })
            }
        }
    }

    @Test("Webhooks: URLs (https, http only to loopback) with a secret file of one secret of 32+ characters per line; none without URLs")
    func webhooks() throws {
        #expect(try AppConfig(environment: Self.minimal).webhooks == nil)
        let secrets = try temporaryFile(
            contents: String(repeating: "a", count: 32) + "\n" + String(repeating: "b", count: 40) + "\n", mode: 0o600)
        let config = try AppConfig(
            environment: Self.minimal.merging([
                "SIWA_WEBHOOK_URLS": "https://api.example.com/hooks, http://127.0.0.1:8080/siwa", "SIWA_WEBHOOK_SECRET_FILE": secrets,
                "SIWA_WEBHOOK_TIMEOUT": "5",
            ]) { $1 })
        let webhooks = try #require(config.webhooks)
        #expect(webhooks.endpoints == ["https://api.example.com/hooks", "http://127.0.0.1:8080/siwa"])
        #expect(webhooks.secrets.map(\.count) == [32, 40])
        #expect(webhooks.http.timeout == 5 && webhooks.retryHours == 72)
        let short = try temporaryFile(contents: "too-short\n", mode: 0o600)
        let cases: [[String: String]] = [
            ["SIWA_WEBHOOK_URLS": "http://api.example.com/hooks", "SIWA_WEBHOOK_SECRET_FILE": secrets],
            ["SIWA_WEBHOOK_URLS": "https://api.example.com/hooks"],
            ["SIWA_WEBHOOK_URLS": "https://api.example.com/hooks", "SIWA_WEBHOOK_SECRET_FILE": short],
            ["SIWA_WEBHOOK_URLS": "https://a.example.com/h,https://a.example.com/h", "SIWA_WEBHOOK_SECRET_FILE": secrets],
            ["SIWA_WEBHOOK_SECRET_FILE": secrets],
            ["SIWA_WEBHOOK_URLS": "https://api.example.com/hooks", "SIWA_WEBHOOK_SECRET_FILE": secrets, "SIWA_WEBHOOK_RETRY_HOURS": "24"],
        ]
        for extra in cases {
            #expect(throws: ConfigurationError.self, "\(extra)") { try AppConfig(environment: Self.minimal.merging(extra) { $1 }) }
        }
    }

    @Test("The account page: no app name and no progress by default; a name of at most 64 characters without control characters")
    func page() throws {
        let plain = try AppConfig(environment: Self.minimal).page
        #expect(plain.appName == nil && !plain.showsProgress)
        let named = try AppConfig(environment: Self.minimal.merging(["SIWA_APP_NAME": "Lingo Läuft", "SIWA_PAGE_PROGRESS": "true"]) { $1 })
            .page
        #expect(named.appName == "Lingo Läuft" && named.showsProgress)
        for extra in [
            ["SIWA_APP_NAME": String(repeating: "x", count: 65)], ["SIWA_APP_NAME": "Tab\tName"], ["SIWA_PAGE_PROGRESS": "sometimes"],
        ] {
            #expect(throws: ConfigurationError.self, "\(extra)") { try AppConfig(environment: Self.minimal.merging(extra) { $1 }) }
        }
    }

    @Test("Apple's domain-association file: none by default; read once when named; a missing or empty file is named")
    func domainAssociation() throws {
        #expect(try AppConfig(environment: Self.minimal).domainAssociation == nil)
        let file = try temporaryFile(contents: "from Apple\n", mode: 0o640)
        let read = try AppConfig(environment: Self.minimal.merging(["SIWA_DOMAIN_ASSOCIATION_FILE": file]) { $1 }).domainAssociation
        #expect(read == DomainAssociation(path: file, contents: Array("from Apple\n".utf8)))
        let empty = try temporaryFile(contents: "", mode: 0o640)
        for path in ["/nonexistent/apple-developer-domain-association.txt", empty] {
            #expect {
                try AppConfig(environment: Self.minimal.merging(["SIWA_DOMAIN_ASSOCIATION_FILE": path]) { $1 })
            } throws: { error in
                "\(error)".contains("SIWA_DOMAIN_ASSOCIATION_FILE") && "\(error)".contains(path)
            }
        }
    }

    private func temporaryFile(contents: String, mode: Int) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("secret-\(UUID().uuidString)").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
        return path
    }

    @Test("SIWA_CORS_ORIGINS: exact origins as browsers send them; `*`, paths, default ports, capitals and http elsewhere are named")
    func corsOrigins() throws {
        #expect(try AppConfig(environment: Self.minimal).corsOrigins.isEmpty)
        let good = "https://app.example.com, capacitor://localhost,http://localhost:8100,https://app.example.com:8443,http://[::1]:3000"
        let config = try AppConfig(environment: Self.minimal.merging(["SIWA_CORS_ORIGINS": good]) { $1 })
        #expect(
            config.corsOrigins == [
                "https://app.example.com", "capacitor://localhost", "http://localhost:8100", "https://app.example.com:8443",
                "http://[::1]:3000",
            ])
        for bad in [
            "*", "null", "https://app.example.com/", "https://App.example.com", "https://app.example.com:443", "http://app.example.com",
            "https://app.example.com/path", "app.example.com", "https://user@app.example.com", "https://app.example.com?x", "file://host",
            "https://", "https://app.example.com:0", "https://app.example.com:08443", "HTTPS://app.example.com",
            "https://app.example.com,https://app.example.com",
        ] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try AppConfig(environment: Self.minimal.merging(["SIWA_CORS_ORIGINS": bad]) { $1 })
            }
            do {
                _ = try AppConfig(environment: Self.minimal.merging(["SIWA_CORS_ORIGINS": bad]) { $1 })
            } catch let error as ConfigurationError {
                #expect(error.problems.count == 1 && error.problems[0].hasPrefix("SIWA_CORS_ORIGINS: "), "\(error.problems)")
            }
        }
    }
}
