import AppleID
import Foundation
import HTTPClient
package import Identity
import JOSE
package import Logging
package import MariaDB
package import SyncRules

#if canImport(Glibc)
    import Glibc
#endif

/// Every problem found in the configuration, reported together at start.
package struct ConfigurationError: Error, CustomStringConvertible {
    /// One line per invalid or missing key.
    package let problems: [String]

    package var description: String {
        "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
    }
}

/// The whole configuration of `siwa`, read once at start from `SIWA_*` environment variables.
///
/// Libraries receive the typed parts of it (`MariaDB.Configuration`, ...) and never read the
/// environment. Each key is documented in the table of docs/CONFIGURATION.md; `AppConfig.keys` is the same list.
package struct AppConfig: Sendable {
    /// The unix socket nginx connects to.
    package var socketPath: String
    /// Permissions of the socket file.
    package var socketMode: UInt32
    /// Listen backlog: connections waiting for a free worker.
    package var socketBacklog: Int32
    /// Worker threads, each with its own database connection.
    package var workerThreads: Int
    /// Hard limit on any request body, in bytes.
    package var maxBodyBytes: Int
    /// The database connection settings.
    package var database: MariaDB.Configuration
    /// The log level.
    package var logLevel: Logger.Level
    /// How log lines are written: readable text, or one JSON object per line.
    package var logFormat: LogFormat
    /// Whether `serve` records metrics and answers `GET /metrics`.
    package var metricsEnabled: Bool
    /// Directory with the `NNNN_name.sql` migration files.
    package var migrationsDirectory: String
    /// Sign in with Apple settings; nil when no `SIWA_APPLE_*` key is set (`serve` then refuses to start).
    package var apple: AppleSettings?
    /// The app's own sessions and tokens; nil when none of their keys is set (`serve` then refuses to start).
    package var sessions: SessionSettings?
    /// The type of the access-token signing keys that `siwa keys rotate` makes.
    package var accessTokenAlgorithm: AccessTokenAlgorithm
    /// The lifecycle webhooks of the app's backend; nil when no endpoint is set.
    package var webhooks: WebhookSettings?
    /// What the account page shows of the app.
    package var page: PageSettings
    /// Apple's domain-association file; nil when none is needed (the path is then a 404).
    package var domainAssociation: DomainAssociation?
    /// How long `siwa jobs` keeps the rows of the tables that grow with use.
    package var retention: RetentionPolicy
    /// The collections the app syncs besides the built-in model; none unless declared.
    package var syncSchema: SyncSchema = .empty
    /// The origins of the pages of other sites (and webviews) that may call siwa's token routes from
    /// a browser (`SIWA_CORS_ORIGINS`), exactly as a browser sends them in `Origin`; none by default.
    package var corsOrigins: [String] = []

    /// One documented configuration key: a row of the table in docs/CONFIGURATION.md, which
    /// `siwa config --markdown` prints from these values.
    package struct Key: Sendable {
        package let name: String
        /// The values it takes (Markdown).
        package let type: String
        /// The value used when the key is unset; nil when there is none.
        package let defaultValue: String?
        /// How the table shows the default when it is not one value (Markdown); nil shows `defaultValue`.
        package let shownDefault: String?
        /// When the key must be set: "no", "yes", or the condition (Markdown).
        package let required: String
        /// Whether the key names a file of secrets, whose contents never appear in output.
        package let isSecret: Bool
        /// What it sets (Markdown).
        package let summary: String

        init(
            name: String, type: String, defaultValue: String?, shownDefault: String? = nil, required: String,
            isSecret: Bool = false, summary: String
        ) {
            self.name = name
            self.type = type
            self.defaultValue = defaultValue
            self.shownDefault = shownDefault
            self.required = required
            self.isSecret = isSecret
            self.summary = summary
        }
    }

    /// Every key `siwa` reads, in the order of the table in docs/CONFIGURATION.md.
    package static let keys: [Key] = [
        Key(
            name: "SIWA_SOCKET_PATH", type: "path", defaultValue: "/run/siwa/siwa.sock", required: "no",
            summary: "FastCGI unix socket nginx connects to"),
        Key(name: "SIWA_SOCKET_MODE", type: "octal", defaultValue: "0660", required: "no", summary: "permissions of the socket file"),
        Key(
            name: "SIWA_SOCKET_BACKLOG", type: "int 16...65535", defaultValue: "1024", required: "no",
            summary: "listen backlog (connections waiting for a free worker)"),
        Key(
            name: "SIWA_WORKER_THREADS", type: "int 1...512", defaultValue: "64", required: "no",
            summary: "worker threads, one database connection each"),
        Key(
            name: "SIWA_MAX_BODY_BYTES", type: "int 1024...16777216", defaultValue: "1048576", required: "no",
            summary: "hard limit on a request body (JSON 413 above)"),
        Key(name: "SIWA_DB_SOCKET", type: "path", defaultValue: nil, required: "one of the two", summary: "MariaDB unix socket"),
        Key(
            name: "SIWA_DB_HOST", type: "`host[:port],...`", defaultValue: nil, required: "one of the two",
            summary: "MariaDB TCP host; several, in order of preference, for a Galera cluster (see [SCALING.md](SCALING.md))"),
        Key(
            name: "SIWA_DB_PORT", type: "int", defaultValue: "3306", required: "no", summary: "MariaDB TCP port of a host given without one"
        ),
        Key(
            name: "SIWA_DB_SYNC_WAIT", type: "int 0...15", defaultValue: nil, shownDefault: "`15` with several hosts, else `0`",
            required: "no",
            summary:
                "`wsrep_sync_wait` of every session: on a Galera cluster, 15 makes every statement wait until its node has applied what the cluster committed"
        ),
        Key(name: "SIWA_DB_NAME", type: "string", defaultValue: nil, required: "yes", summary: "database (schema) name"),
        Key(name: "SIWA_DB_USER", type: "string", defaultValue: nil, required: "yes", summary: "database user"),
        Key(
            name: "SIWA_DB_PASSWORD_FILE", type: "path", defaultValue: nil, shownDefault: "none", required: "no", isSecret: true,
            summary: "file holding the database password"),
        Key(
            name: "SIWA_DB_CONNECT_TIMEOUT", type: "seconds 1...60", defaultValue: "2", required: "no",
            summary:
                "connect timeout: the longest each wait of a connect takes (within a request, also at most the time left of `SIWA_DB_TIMEOUT`)"
        ),
        Key(
            name: "SIWA_DB_TIMEOUT", type: "seconds 1...3600", defaultValue: "10", required: "no",
            summary:
                #"the time one request may wait for the database in all (statements, retries, reconnects, and its wait for a worker thread before them): a frozen database fails a request with 503 within it; also each read and write timeout ([OPERATIONS.md, "A database that stops answering"](OPERATIONS.md#a-database-that-stops-answering))"#
        ),
        Key(
            name: "SIWA_LOG_LEVEL", type: "`trace` ... `critical`", defaultValue: "info", required: "no",
            summary: "log level; logs go to standard error; `info` logs a line per request (id, route, status, duration)"),
        Key(
            name: "SIWA_LOG_FORMAT", type: "`text`, `json`", defaultValue: "text", required: "no",
            summary: "`json`: one JSON object per line for a log pipeline (`time`, `level`, `logger`, `message`, then the metadata)"),
        Key(
            name: "SIWA_METRICS", type: "`true`, `false`", defaultValue: "true", required: "no",
            summary: "Prometheus metrics at `GET /metrics`, which nginx serves to loopback only (see [OPERATIONS.md](OPERATIONS.md))"),
        Key(
            name: "SIWA_MIGRATIONS_DIR", type: "path", defaultValue: "sql", required: "no",
            summary: "directory of the `NNNN_name.sql` migrations"),
        Key(
            name: "SIWA_APPLE_TEAM_ID", type: "10 characters A-Z0-9", defaultValue: nil, required: "for `serve`",
            summary: "Apple Developer Team ID (`iss` of the client secret)"),
        Key(
            name: "SIWA_APPLE_KEY_ID", type: "10 characters A-Z0-9", defaultValue: nil, required: "for `serve`",
            summary: "id of the Sign in with Apple key (`kid` of the client secret)"),
        Key(
            name: "SIWA_APPLE_PRIVATE_KEY_FILE", type: "path", defaultValue: nil, required: "for `serve`", isSecret: true,
            summary: "the Sign in with Apple key as downloaded (`.p8`, PKCS#8 P-256)"),
        Key(
            name: "SIWA_APPLE_BUNDLE_IDS", type: "comma-separated ids", defaultValue: nil, shownDefault: "none",
            required: "one client id for `serve`", summary: "bundle ids accepted as `aud` (native sign-in)"),
        Key(
            name: "SIWA_APPLE_SERVICES_ID", type: "id", defaultValue: nil, shownDefault: "none", required: "one client id for `serve`",
            summary: "Services ID accepted as `aud` (web sign-in)"),
        Key(
            name: "SIWA_APPLE_REDIRECT_URIS", type: "comma-separated `SERVICES_ID=URL`", defaultValue: nil, shownDefault: "none",
            required: "no",
            summary:
                "the Return URLs registered at Apple for the Services IDs whose credentials apps post to `POST /auth/apple` "
                + "(Android, Flutter, Sign in with Apple JS): each Services ID named is accepted as `aud`, and its codes are "
                + "exchanged with the `redirectUri` of the request only when it is one of its URLs, exactly"),
        Key(
            name: "SIWA_APPLE_APP_CALLBACKS", type: "comma-separated `NAME=TARGET`", defaultValue: nil, shownDefault: "none",
            required: "no",
            summary:
                "apps that open Apple's web authorization in a browser tab (Android, Flutter) with the Return URL "
                + "`SIWA_PUBLIC_URL/auth/app-callback/NAME`: Apple's form post there is sent on to TARGET, "
                + "`intent:PACKAGE` (the intent the `sign_in_with_apple` Flutter plugin waits for), an App Link "
                + "`https://...`, or a custom scheme `scheme:/path`"),
        Key(
            name: "SIWA_CORS_ORIGINS", type: "comma-separated `scheme://host[:port]`", defaultValue: nil, shownDefault: "none",
            required: "no",
            summary:
                "the origins of web apps on other sites and of webviews (`https://app.example.com`, `capacitor://localhost`) "
                + "whose pages may call the token routes from a browser (`POST /auth/token`, `/auth/refresh`, `/auth/me`, "
                + "the sessions, `/auth/logout`, `DELETE /auth/account`, `POST /sync`): each exact, as the browser sends it "
                + "(lowercase, no path, no default port; `https`, `http` only to a loopback address, or an app's own scheme); "
                + "`*` is refused; never with credentials (see [WEB.md](WEB.md#an-app-on-another-origin))"),
        Key(
            name: "SIWA_APP_CLIENTS", type: "comma-separated `CLIENT_ID=REDIRECT_URI`", defaultValue: nil, shownDefault: "none",
            required: "no",
            summary:
                "native apps that sign in through the system browser with PKCE (`GET /auth/app/start`, `POST /auth/token`; "
                + "needs `SIWA_APPLE_SERVICES_ID`), "
                + "each with its redirect URIs: a private-use scheme (`com.example.app:/apple`), `http://127.0.0.1/path` "
                + "(any port at sign-in) or https; a client id may be named more than once"),
        Key(
            name: "SIWA_APPLE_BASE_URL", type: "https URL", defaultValue: "https://appleid.apple.com", required: "no",
            summary: "Apple's endpoints; `http` only to a loopback address (the emulator)"),
        Key(
            name: "SIWA_APPLE_CA_FILE", type: "path", defaultValue: nil, shownDefault: "system CAs", required: "no",
            summary: "PEM CA certificates trusted for the base URL"),
        Key(
            name: "SIWA_APPLE_CONNECT_TIMEOUT", type: "seconds 1...30", defaultValue: "3", required: "no",
            summary: "connect timeout of calls to Apple"),
        Key(
            name: "SIWA_APPLE_TIMEOUT", type: "seconds 1...60", defaultValue: "10", required: "no",
            summary: "total timeout of a call to Apple"),
        Key(
            name: "SIWA_APPLE_LEEWAY", type: "seconds 0...60", defaultValue: "60", required: "no",
            summary: "clock skew allowed on `exp`, `iat`, `nbf`"),
        Key(
            name: "SIWA_APPLE_REQUIRE_NONCE", type: "`true`/`false`", defaultValue: "true", required: "no",
            summary: "every identity token must carry the client's nonce"),
        Key(
            name: "SIWA_APPLE_KEYS_COOLDOWN", type: "seconds 1...3600", defaultValue: "10", required: "no",
            summary: "least time between key-set fetches caused by unknown `kid`s or failures"),
        Key(
            name: "SIWA_APPLE_ACCOUNT_DELETE", type: "`delete` or `anonymise`", defaultValue: "delete", required: "no",
            summary:
                "what Apple's `account-delete` notification does: delete the user and all their data, or keep the row with names, emails and Apple identities removed and every session ended"
        ),
        Key(
            name: "SIWA_APPLE_RELAY_DOMAINS", type: "domains, comma-separated",
            defaultValue: AppleSettings.defaultRelayDomains.joined(separator: ","), required: "no",
            summary:
                "Hide My Email domains: when a token has no `is_private_email`, an address at one of them is stored as a relay address (Apple announced `private.icloud.com` for new addresses in June 2026)"
        ),
        Key(
            name: "SIWA_APPLE_MAX_CALLS", type: "int 1...512", defaultValue: nil, shownDefault: "three quarters of `SIWA_WORKER_THREADS`",
            required: "no",
            summary:
                #"code exchanges in flight at Apple at once; beyond them an eighth of the threads may wait up to 1 s for one, and any other sign-in with a code gets 503 `apple_unavailable` with `Retry-After`, so a hanging Apple cannot hold every worker thread ([OPERATIONS.md, "Calls to Apple"](OPERATIONS.md#calls-to-apple))"#
        ),
        Key(
            name: "SIWA_APPLE_UNREACHABLE_COOLDOWN", type: "seconds 0...300", defaultValue: "5", required: "no",
            summary:
                "after a call could not reach Apple (timeout, refused connection), sign-ins with a code get 503 at once for this long instead of waiting for Apple again"
        ),
        Key(
            name: "SIWA_APPLE_VALIDATION_RATE", type: "calls a second 1...10000", defaultValue: "\(AppleValidationPace.defaultRate)",
            required: "no",
            summary:
                #"the most calls a second `siwa jobs` makes to Apple for the daily check of the stored refresh tokens, all lanes together: each token is checked once a day, so N tokens need N / 86,400 a second (10 million: 116); sign-ins' code exchanges are `siwa serve`'s, bounded by `SIWA_APPLE_MAX_CALLS` ([OPERATIONS.md, "The daily check of Apple's tokens"](OPERATIONS.md#the-daily-check-of-apples-tokens))"#
        ),
        Key(
            name: "SIWA_APPLE_VALIDATION_LANES", type: "int 1...256", defaultValue: "\(AppleValidationPace.defaultLanes)", required: "no",
            summary:
                "the most checks of Apple's tokens in flight at once in `siwa jobs`, each a thread with its own database connection and Apple client (one runs until a backlog shows): a lane makes one call per Apple latency, 5 a second at 200 ms"
        ),
        Key(
            name: "SIWA_APPLE_CLIENT_SECRET_LIFETIME", type: "seconds 60...15552000", defaultValue: "86400", required: "no",
            summary:
                "lifetime of the client secrets made from the `.p8` key: `iat` is set a minute back (a quarter of the lifetime under 240 s), and a secret is renewed at half its lifetime or once less than a minute (that quarter) remains before its `exp`, whichever comes first"
        ),
        Key(
            name: "SIWA_PUBLIC_URL", type: "https URL", defaultValue: nil, required: "to serve",
            summary:
                "the site's origin as browsers see it, such as `https://auth.example.com`: `iss` of our access tokens, the web sign-in's `redirect_uri` (`<url>/auth/callback`, registered at Apple for the Services ID), the `Origin` that cookie-authenticated writes must carry"
        ),
        Key(
            name: "SIWA_ACCESS_KEYS_DIR", type: "path", defaultValue: nil, required: "to serve", isSecret: true,
            summary:
                "directory of the access-token signing keys, one `<kid>.pem` per key (P-256, or RSA 2048+; mode 0600); the `kid` sorting last signs (ES256 or RS256 after its type), all verify; `siwa keys rotate` adds one"
        ),
        Key(
            name: "SIWA_ACCESS_KEYS_RESCAN", type: "seconds 1...3600", defaultValue: "10", required: "no",
            summary:
                "how often the key directory is checked for a key added or removed: `siwa keys rotate` takes effect within it, in every running process"
        ),
        Key(
            name: "SIWA_ACCESS_TOKEN_ALGORITHM", type: #"`ES256`\|`RS256`"#, defaultValue: "ES256", required: "no",
            summary:
                "type of the keys `siwa keys rotate` makes: ES256 (P-256, about 16 µs per signature here) or RS256 (RSA 2048, about 240 µs)"
        ),
        Key(
            name: "SIWA_DATA_KEYS_FILE", type: "path", defaultValue: nil, required: "to serve", isSecret: true,
            summary:
                "the keys that encrypt Apple's refresh tokens (AES-256-GCM): one `<id> <base64 of 32 random bytes>` per line, the first encrypts, all decrypt"
        ),
        Key(
            name: "SIWA_SESSION_LIFETIME", type: "seconds 3600...31536000", defaultValue: "7776000", required: "no",
            summary: "a session ends after this long without a refresh (90 days)"),
        Key(
            name: "SIWA_SESSION_MAX_LIFETIME", type: "seconds 3600...315360000", defaultValue: nil, shownDefault: "none", required: "no",
            summary:
                "a session ends this long after it began, however often it is refreshed (an absolute limit next to `SIWA_SESSION_LIFETIME`)"
        ),
        Key(
            name: "SIWA_AUDIT_RETENTION_DAYS", type: "days 1...3650", defaultValue: "365", required: "no",
            summary:
                "audit events older than this are purged by `siwa jobs` (see [OPERATIONS.md](OPERATIONS.md#retention) for every table that grows)"
        ),
        Key(
            name: "SIWA_SESSION_RETENTION_DAYS", type: "days 1...3650", defaultValue: "30", required: "no",
            summary:
                "sessions that ended (revoked or expired) and spent refresh tokens are purged by `siwa jobs` this long after; until then a spent refresh token presented again ends its session as a theft"
        ),
        Key(
            name: "SIWA_WEBHOOK_RETENTION_DAYS", type: "days 1...3650", defaultValue: "30", required: "no",
            summary:
                "lifecycle webhook events, with their deliveries and attempts, are purged by `siwa jobs` this long after they were recorded (never while a delivery still waits)"
        ),
        Key(
            name: "SIWA_APPLE_RECORD_RETENTION_DAYS", type: "days 1...3650", defaultValue: "30", required: "no",
            summary: "the records of Apple's notifications and of the revocations Apple accepted are purged by `siwa jobs` this long after"),
        Key(
            name: "SIWA_REFRESH_REUSE_INTERVAL", type: "seconds 0...300", defaultValue: "10", required: "no",
            summary:
                "the refresh token rotated last, presented again this soon, gets a new pair for the same session instead of ending it; 0 turns it off"
        ),
        Key(
            name: "SIWA_GUEST_ACCOUNTS", type: #"true\|false"#, defaultValue: "false", required: "no",
            summary:
                "`POST /auth/guest` makes guest accounts (no Apple ID yet), which a later sign-in with Apple upgrades keeping their progress; see [IDENTITIES.md](IDENTITIES.md#guest-accounts)"
        ),
        Key(
            name: "SIWA_GUEST_RETENTION_DAYS", type: "days 1...3650", defaultValue: "30", required: "no",
            summary:
                "guests whose sessions all went unused this long are deleted by `siwa jobs` (`user.deleted` with `source` `guest_expired`)"),
        Key(
            name: "SIWA_LINK_SECRET_FILE", type: "path", defaultValue: nil, shownDefault: "none (linking off)", required: "no",
            isSecret: true,
            summary:
                "secrets the app's older backend presents (Bearer) to `POST /internal/link-tokens`: one per line, at least 32 characters (`openssl rand -hex 32`), any line accepted, so one can be replaced while the other still works"
        ),
        Key(
            name: "SIWA_LINK_TOKEN_LIFETIME", type: "seconds 60...3600", defaultValue: "600", required: "no",
            summary: "how long a link token can be used (once)"),
        Key(
            name: "SIWA_WEBHOOK_URLS", type: "URLs, comma-separated", defaultValue: nil, shownDefault: "none", required: "no",
            summary:
                "the app backend's webhook endpoints: every lifecycle event goes to each (`https`, or `http` to a loopback address; at most 255 characters); see [WEBHOOKS.md](WEBHOOKS.md#lifecycle-webhooks)"
        ),
        Key(
            name: "SIWA_WEBHOOK_SECRET_FILE", type: "path", defaultValue: nil, required: "with `SIWA_WEBHOOK_URLS`", isSecret: true,
            summary:
                "the webhook signing secrets, one per line, at least 32 characters each (`openssl rand -hex 32`); each signs every delivery, so a new secret can be added before the old one is removed"
        ),
        Key(
            name: "SIWA_WEBHOOK_TIMEOUT", type: "seconds 1...60", defaultValue: "10", required: "no",
            summary: "total timeout of one delivery; a slower endpoint counts as failed and is retried"),
        Key(
            name: "SIWA_WEBHOOK_RETRY_HOURS", type: "hours 72...720", defaultValue: "72", required: "no",
            summary:
                "a delivery that keeps failing is retried this long (10 s, doubled per attempt, at most an hour apart), then given up; `siwa webhooks redeliver` sends it again"
        ),
        Key(
            name: "SIWA_APP_NAME", type: "text, 1...64 characters", defaultValue: nil, shownDefault: #"(none: "Account")"#, required: "no",
            summary: "the app's name in the account page's heading and title"),
        Key(
            name: "SIWA_PAGE_PROGRESS", type: #"true\|false"#, defaultValue: "false", required: "no",
            summary: "the account page shows the progress the app syncs (level, XP, streak, lessons, achievements) once some is synced"),
        Key(
            name: "SIWA_SYNC_COLLECTIONS", type: "path", defaultValue: nil, shownDefault: "none (the built-in model only)", required: "no",
            summary:
                "the app's declared sync collections (JSON: each collection's key, fields, types, merge rules, deletion and limits), checked at start with every problem named; see [SYNC.md](SYNC.md)"
        ),
        Key(
            name: "SIWA_DOMAIN_ASSOCIATION_FILE", type: "path", defaultValue: nil, shownDefault: "none (404)", required: "no",
            summary:
                "Apple's `apple-developer-domain-association.txt`, served at `/.well-known/`, for a Services ID whose registration asks for one (Apple's current registration does not); keep it under /etc/siwa (`siwa setup --domain-association`)"
        ),
    ]

    /// Reads and validates the configuration.
    /// - Parameters:
    ///   - environment: the process environment (only `SIWA_*` keys are looked at).
    ///   - clock: the time of the access tokens (tests set it).
    /// - Throws: `ConfigurationError` naming every missing, invalid or unknown key at once.
    package init(environment: [String: String], clock: any WallClock = SystemClock()) throws {
        var reader = EnvironmentReader(environment: environment)
        socketPath = reader.string("SIWA_SOCKET_PATH")
        socketMode = reader.octal("SIWA_SOCKET_MODE")
        socketBacklog = Int32(reader.integer("SIWA_SOCKET_BACKLOG", in: 16...65535))
        workerThreads = reader.integer("SIWA_WORKER_THREADS", in: 1...512)
        maxBodyBytes = reader.integer("SIWA_MAX_BODY_BYTES", in: 1024...16_777_216)
        logLevel = reader.logLevel("SIWA_LOG_LEVEL")
        logFormat = reader.logFormat("SIWA_LOG_FORMAT")
        metricsEnabled = reader.boolean("SIWA_METRICS")
        migrationsDirectory = reader.string("SIWA_MIGRATIONS_DIR")

        let socket = reader.optionalString("SIWA_DB_SOCKET")
        let hosts = reader.optionalString("SIWA_DB_HOST")
        let port = reader.integer("SIWA_DB_PORT", in: 1...65535)
        var endpoints: [MariaDB.Configuration.Endpoint]
        switch (socket, hosts) {
        case (let socket?, nil): endpoints = [.unixSocket(path: socket)]
        case (nil, let hosts?): endpoints = reader.databaseHosts(hosts, defaultPort: port)
        case (.some, .some):
            reader.problem("SIWA_DB_SOCKET and SIWA_DB_HOST: set only one of them")
            endpoints = []
        case (nil, nil):
            reader.problem("SIWA_DB_SOCKET or SIWA_DB_HOST: one of them is required")
            endpoints = []
        }
        if endpoints.isEmpty { endpoints = [.unixSocket(path: "")] }
        database = MariaDB.Configuration(
            endpoint: endpoints[0],
            user: reader.required("SIWA_DB_USER"),
            password: reader.secret("SIWA_DB_PASSWORD_FILE")?.value,
            database: reader.required("SIWA_DB_NAME"),
            connectTimeout: reader.integer("SIWA_DB_CONNECT_TIMEOUT", in: 1...60),
            readWriteTimeout: reader.integer("SIWA_DB_TIMEOUT", in: 1...3600)
        )
        database.endpoints = endpoints
        database.syncWait =
            reader.optionalString("SIWA_DB_SYNC_WAIT") == nil
            ? (endpoints.count > 1 ? 15 : 0) : reader.integer("SIWA_DB_SYNC_WAIT", in: 0...15)
        apple = reader.appleSettings(workerThreads: workerThreads)
        sessions = reader.sessionSettings(clock: clock)
        if reader.optionalString("SIWA_APP_CLIENTS") != nil, reader.optionalString("SIWA_APPLE_SERVICES_ID") == nil {
            reader.problem("SIWA_APP_CLIENTS: the apps sign in through Apple's web authorization, which needs SIWA_APPLE_SERVICES_ID")
        }
        if reader.optionalString("SIWA_APP_CLIENTS") != nil,
            !EnvironmentReader.sessionKeys.contains(where: { reader.optionalString($0) != nil })
        {
            reader.problem(
                "SIWA_APP_CLIENTS: the apps get sessions, which need SIWA_PUBLIC_URL, SIWA_ACCESS_KEYS_DIR and SIWA_DATA_KEYS_FILE")
        }
        accessTokenAlgorithm = reader.accessTokenAlgorithm()
        webhooks = reader.webhookSettings()
        page = reader.pageSettings()
        domainAssociation = reader.domainAssociation()
        syncSchema = reader.syncSchema()
        corsOrigins = reader.corsOrigins()
        retention = RetentionPolicy(
            auditEventDays: reader.integer("SIWA_AUDIT_RETENTION_DAYS", in: 1...3650),
            sessionDays: reader.integer("SIWA_SESSION_RETENTION_DAYS", in: 1...3650),
            webhookDays: reader.integer("SIWA_WEBHOOK_RETENTION_DAYS", in: 1...3650),
            appleRecordDays: reader.integer("SIWA_APPLE_RECORD_RETENTION_DAYS", in: 1...3650))
        reader.rejectUnknownKeys()
        if !reader.problems.isEmpty { throw ConfigurationError(problems: reader.problems) }
    }

    /// Every key at its default, with the given database: the value tests and tools build directly,
    /// setting `apple`, `sessions` and the rest as they need.
    package init(database: MariaDB.Configuration) {
        // Only the database keys are required and the defaults are valid (AppConfigTests checks
        // both), so reading this environment cannot fail.
        let required = ["SIWA_DB_SOCKET": "/", "SIWA_DB_NAME": "-", "SIWA_DB_USER": "-"]
        guard var config = try? AppConfig(environment: required) else { preconditionFailure("the defaults are invalid") }
        config.database = database
        self = config
    }

    /// Every key as a commented example line with its meaning, type and default: the text of
    /// `siwa config --example` and of the package's `/etc/siwa/siwa.env.example`.
    package static var example: String {
        var text = """
            # The configuration of `siwa serve` and `siwa jobs`: SIWA_* lines, read once at start.
            # `siwa setup` writes /etc/siwa/siwa.env; or copy this file there (root:siwa, mode 0640) and
            # set at least the required keys. Secrets are files (the *_FILE keys) readable by siwa only.
            # `siwa config` checks the result and prints it with secrets redacted.

            """
        for key in keys {
            let required = key.required == "no" ? "" : ", required: " + plain(key.required)
            text += "\n# \(plain(key.summary)) (\(plain(key.type))\(required))\n"
            text += "#\(key.name)=\(key.defaultValue ?? "")\n"
        }
        return text
    }

    /// The table of docs/CONFIGURATION.md (`siwa config --markdown`): a row per key.
    package static var markdownTable: String {
        var lines = ["| Key | Type | Default | Required | Secret | Meaning |", "| --- | --- | --- | --- | --- | --- |"]
        for key in keys {
            let shown = key.shownDefault ?? key.defaultValue.map { "`\($0)`" } ?? ""
            let cells = ["`\(key.name)`", key.type, shown, key.required, key.isSecret ? "yes" : "no", key.summary]
            lines.append("|" + cells.map { $0.isEmpty ? " |" : " \($0) |" }.joined())
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Markdown as a comment line shows it: links as their text, without backticks.
    static func plain(_ markdown: String) -> String {
        markdown.replacing(#/\[([^\]]*)\]\([^)]*\)/#) { $0.output.1 }.replacingOccurrences(of: "`", with: "")
    }

    /// The configuration as `KEY=value` lines, secrets redacted (for `siwa config`).
    package func redactedSummary(environment: [String: String]) -> String {
        AppConfig.keys.map { key in
            let value = environment[key.name] ?? key.defaultValue ?? ""
            return "\(key.name)=\(key.isSecret && environment[key.name] != nil ? "\(value) (contents <redacted>)" : value)"
        }.joined(separator: "\n")
    }
}

extension EnvironmentReader {
    /// The Sign in with Apple settings; nil when no Apple key is set at all (no problem then), or
    /// when a problem was recorded.
    mutating func appleSettings(workerThreads: Int) -> AppleSettings? {
        let anySet = AppConfig.keys.contains { $0.name.hasPrefix("SIWA_APPLE_") && optionalString($0.name) != nil }
        guard anySet else { return nil }
        let teamID = required("SIWA_APPLE_TEAM_ID")
        let keyID = required("SIWA_APPLE_KEY_ID")
        for (name, value) in [("SIWA_APPLE_TEAM_ID", teamID), ("SIWA_APPLE_KEY_ID", keyID)] where !value.isEmpty {
            if value.count != 10 || !value.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber) }) {
                problem("\(name): expected 10 characters A-Z and 0-9, as Apple shows it")
            }
        }
        var privateKey: P256PrivateKey?
        if let pem = secret("SIWA_APPLE_PRIVATE_KEY_FILE") {
            privateKey = try? P256PrivateKey(pem: pem.value)
            if privateKey == nil { problem("SIWA_APPLE_PRIVATE_KEY_FILE: not a P-256 private key in PEM (the .p8 file from Apple)") }
        } else if optionalString("SIWA_APPLE_PRIVATE_KEY_FILE") == nil {
            problem("SIWA_APPLE_PRIVATE_KEY_FILE: required")
        }
        let bundleIDs = (optionalString("SIWA_APPLE_BUNDLE_IDS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let servicesID = optionalString("SIWA_APPLE_SERVICES_ID")
        let redirectURIs = servicesRedirectURIs(bundleIDs: bundleIDs)
        let appCallbacks = self.appCallbacks()
        if bundleIDs.isEmpty && servicesID == nil && redirectURIs.isEmpty {
            problem("SIWA_APPLE_BUNDLE_IDS or SIWA_APPLE_SERVICES_ID: at least one client id is required")
        }
        let baseURL = string("SIWA_APPLE_BASE_URL")
        if let url = URL(string: baseURL), let host = url.host {
            let loopback = ["127.0.0.1", "localhost", "::1"].contains(host)
            if !(url.scheme == "https" || (url.scheme == "http" && loopback)) || url.query != nil {
                problem("SIWA_APPLE_BASE_URL: must be https (http only to a loopback address), without a query")
            }
        } else {
            problem("SIWA_APPLE_BASE_URL: not a URL")
        }
        let caFile = optionalString("SIWA_APPLE_CA_FILE")
        if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            problem("SIWA_APPLE_CA_FILE: cannot read \(caFile)")
        }
        let http = HTTPClientConfiguration(
            connectTimeout: Double(integer("SIWA_APPLE_CONNECT_TIMEOUT", in: 1...30)),
            timeout: Double(integer("SIWA_APPLE_TIMEOUT", in: 1...60)), caFile: caFile)
        let leeway = integer("SIWA_APPLE_LEEWAY", in: 0...IdentityTokenPolicy.maximumLeeway)
        let requireNonce = boolean("SIWA_APPLE_REQUIRE_NONCE")
        let keysCooldown = Double(integer("SIWA_APPLE_KEYS_COOLDOWN", in: 1...3600))
        let clientSecretLifetime = integer(
            "SIWA_APPLE_CLIENT_SECRET_LIFETIME", in: ClientSecretFactory.minimumLifetime...ClientSecretFactory.maximumLifetime)
        var anonymise = false
        switch string("SIWA_APPLE_ACCOUNT_DELETE").lowercased() {
        case "delete": anonymise = false
        case "anonymise", "anonymize": anonymise = true
        default: problem("SIWA_APPLE_ACCOUNT_DELETE: expected delete or anonymise")
        }
        let relayDomains = string("SIWA_APPLE_RELAY_DOMAINS").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        if relayDomains.contains(where: { $0.contains("@") || !$0.contains(".") }) {
            problem("SIWA_APPLE_RELAY_DOMAINS: expected domains such as privaterelay.appleid.com")
        }
        // Sized from Apple's latency (docs/OPERATIONS.md, "Calls to Apple"): three quarters of the
        // threads exchange codes, an eighth more may wait a second for them, the rest is kept for
        // the routes that never call Apple.
        let maximumCalls =
            optionalString("SIWA_APPLE_MAX_CALLS") == nil
            ? max(1, workerThreads * 3 / 4) : integer("SIWA_APPLE_MAX_CALLS", in: 1...512)
        let waitingCalls = max(1, workerThreads / 8)
        let cooldown = Double(integer("SIWA_APPLE_UNREACHABLE_COOLDOWN", in: 0...300))
        let validationPace = AppleValidationPace(
            rate: integer("SIWA_APPLE_VALIDATION_RATE", in: 1...10_000), lanes: integer("SIWA_APPLE_VALIDATION_LANES", in: 1...256))
        // Problems are recorded and stop the start.
        guard let privateKey else { return nil }
        return AppleSettings(
            teamID: teamID, keyID: keyID, privateKey: privateKey, bundleIDs: bundleIDs, servicesID: servicesID,
            redirectURIs: redirectURIs, appCallbacks: appCallbacks, baseURL: baseURL,
            http: http, leeway: leeway, requireNonce: requireNonce, keysCooldown: keysCooldown,
            clientSecretLifetime: clientSecretLifetime, anonymiseOnAccountDelete: anonymise, relayDomains: relayDomains,
            maximumCallsInFlight: maximumCalls, maximumCallsWaiting: waitingCalls, unreachableCooldown: cooldown,
            validationPace: validationPace)
    }

    /// `SIWA_APPLE_REDIRECT_URIS`: each Services ID's Return URLs, as registered at Apple (https,
    /// no fragment); a bundle id there is a problem, as Apple never redirects for one.
    mutating func servicesRedirectURIs(bundleIDs: [String]) -> [String: [String]] {
        var uris: [String: [String]] = [:]
        for (clientID, uri) in pairs("SIWA_APPLE_REDIRECT_URIS", expecting: "SERVICES_ID=https://...", name: "^[^\\s=]+$") {
            let url = URL(string: uri)
            guard url?.scheme == "https", url?.host?.isEmpty == false, url?.fragment == nil else {
                problem("SIWA_APPLE_REDIRECT_URIS: \(clientID)'s URL must be https, with a host and no fragment, as Apple requires: \(uri)")
                continue
            }
            if bundleIDs.contains(clientID) {
                problem("SIWA_APPLE_REDIRECT_URIS: \(clientID) is a bundle id; Return URLs belong to Services IDs")
                continue
            }
            if !(uris[clientID] ?? []).contains(uri) { uris[clientID, default: []].append(uri) }
        }
        return uris
    }

    /// The `NAME=VALUE` pairs of the comma-separated `key`, each NAME matching the pattern `name`;
    /// a malformed one is a problem (naming `expecting`) and is left out.
    mutating func pairs(_ key: String, expecting: String, name: String) -> [(String, String)] {
        let items = (optionalString(key) ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return items.compactMap { item in
            let parts = item.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[1].isEmpty, parts[0].range(of: name, options: .regularExpression) != nil else {
                problem("\(key): expected \(expecting), got \(item)")
                return nil
            }
            return (parts[0], parts[1])
        }
    }

    /// `SIWA_APPLE_APP_CALLBACKS`: each app's name (in its Return URL) and where Apple's form post
    /// for it goes.
    mutating func appCallbacks() -> [String: AppCallbackTarget] {
        var targets: [String: AppCallbackTarget] = [:]
        for (name, value) in pairs(
            "SIWA_APPLE_APP_CALLBACKS", expecting: "NAME=TARGET with a NAME of a-z, 0-9 and -", name: "^[a-z0-9-]{1,64}$")
        {
            guard let target = AppCallbackTarget(configured: value) else {
                problem(
                    "SIWA_APPLE_APP_CALLBACKS: \(name)'s target must be intent:PACKAGE, an https:// App Link or scheme:/path "
                        + "(not http, javascript, data or file), without a fragment: \(value)")
                continue
            }
            if targets[name] != nil { problem("SIWA_APPLE_APP_CALLBACKS: \(name) is named twice") }
            targets[name] = target
        }
        return targets
    }

    static let sessionKeys = ["SIWA_PUBLIC_URL", "SIWA_ACCESS_KEYS_DIR", "SIWA_DATA_KEYS_FILE", "SIWA_SESSION_LIFETIME"]

    /// The app's own session settings; nil (and no problem) when none of their keys is set, or
    /// when a problem was recorded.
    mutating func sessionSettings(clock: any WallClock) -> SessionSettings? {
        guard EnvironmentReader.sessionKeys.contains(where: { optionalString($0) != nil }) else { return nil }
        var url = required("SIWA_PUBLIC_URL")
        while url.hasSuffix("/") { url.removeLast() }
        if !url.isEmpty {
            let parsed = URL(string: url)
            let loopback = ["127.0.0.1", "localhost", "::1"].contains(parsed?.host ?? "")
            if parsed?.host == nil || !(parsed?.scheme == "https" || (parsed?.scheme == "http" && loopback))
                || !(parsed?.path ?? "").isEmpty || parsed?.query != nil
            {
                problem("SIWA_PUBLIC_URL: expected https://host[:port] without a path")
            }
        }
        let directory = required("SIWA_ACCESS_KEYS_DIR")
        var tokens: AccessTokens?
        if !directory.isEmpty {
            let rescan = Double(integer("SIWA_ACCESS_KEYS_RESCAN", in: 1...3600))
            do { tokens = try AccessTokens(directory: directory, issuer: url, clock: clock, rescanInterval: rescan) } catch {
                problem("SIWA_ACCESS_KEYS_DIR: \(error)")
            }
        }
        var keys: DataKeys?
        if let secret = secret("SIWA_DATA_KEYS_FILE") {
            do { keys = try DataKeys(text: secret.value) } catch { problem("SIWA_DATA_KEYS_FILE: \(error)") }
        } else if optionalString("SIWA_DATA_KEYS_FILE") == nil {
            problem("SIWA_DATA_KEYS_FILE: required")
        }
        let lifetime = integer("SIWA_SESSION_LIFETIME", in: 3600...31_536_000)
        let reuseInterval = integer("SIWA_REFRESH_REUSE_INTERVAL", in: 0...300)
        let maximumLifetime =
            optionalString("SIWA_SESSION_MAX_LIFETIME") == nil
            ? SessionSettings.unlimited : integer("SIWA_SESSION_MAX_LIFETIME", in: 3600...315_360_000)
        let guestAccounts = boolean("SIWA_GUEST_ACCOUNTS")
        let guestRetentionDays = integer("SIWA_GUEST_RETENTION_DAYS", in: 1...3650)
        let linkTokenLifetime = integer("SIWA_LINK_TOKEN_LIFETIME", in: 60...3600)
        let linkSecrets = lineSecrets("SIWA_LINK_SECRET_FILE")
        let appClients = self.appClients()
        guard let tokens, let keys else { return nil }
        return SessionSettings(
            publicURL: url, accessTokens: tokens, dataKeys: keys, lifetime: lifetime, maximumLifetime: maximumLifetime,
            refreshReuseInterval: reuseInterval, guestAccounts: guestAccounts, guestRetentionDays: guestRetentionDays,
            linkSecrets: linkSecrets, linkTokenLifetime: linkTokenLifetime, appClients: appClients)
    }

    /// `SIWA_APP_CLIENTS`: the native apps that sign in through the browser, with their redirect URIs.
    mutating func appClients() -> [String: [AppRedirectURI]] {
        var clients: [String: [AppRedirectURI]] = [:]
        let expecting = "CLIENT_ID=REDIRECT_URI with a client id of A-Z, a-z, 0-9, '.', '_' and '-'"
        for (clientID, value) in pairs("SIWA_APP_CLIENTS", expecting: expecting, name: "^[A-Za-z0-9._-]{1,64}$") {
            guard let uri = AppRedirectURI(configured: value) else {
                problem(
                    "SIWA_APP_CLIENTS: \(clientID)'s redirect URI must be a private-use scheme (com.example.app:/apple), "
                        + "http://127.0.0.1/path or http://[::1]/path without a port, or https, without a fragment: \(value)")
                continue
            }
            clients[clientID, default: []].append(uri)
        }
        return clients
    }

    /// `SIWA_CORS_ORIGINS`: exact origins, each as a browser serializes it in `Origin`, so that a
    /// comparison of strings is the comparison of origins: a scheme and a host in lowercase, a port
    /// only when not the scheme's default, no path, query, fragment or user. `https`; `http` only to
    /// a loopback address (a development server, an Android webview's `http://localhost`); or an
    /// app's own scheme (`capacitor://localhost`, `ionic://localhost`). `*` and `null` are refused:
    /// any page, or a sandboxed one of any site, would read the answers.
    mutating func corsOrigins() -> [String] {
        let items = (optionalString("SIWA_CORS_ORIGINS") ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        var origins: [String] = []
        for item in items {
            guard item != "*", item.lowercased() != "null" else {
                problem("SIWA_CORS_ORIGINS: \(item) is refused: list each origin that may call siwa from a browser, exactly")
                continue
            }
            guard let origin = EnvironmentReader.exactOrigin(item) else {
                problem(
                    "SIWA_CORS_ORIGINS: expected scheme://host[:port] as a browser sends it (lowercase, without a path, a default "
                        + "port or a trailing slash; https, http only to localhost, 127.0.0.1 or [::1], or an app's scheme), got \(item)")
                continue
            }
            if origins.contains(origin) { problem("SIWA_CORS_ORIGINS: \(origin) is listed twice") } else { origins.append(origin) }
        }
        return origins
    }

    /// `text` when it is an origin exactly as a browser serializes it; else nil.
    static func exactOrigin(_ text: String) -> String? {
        guard let separator = text.range(of: "://") else { return nil }
        let scheme = text[..<separator.lowerBound]
        let authority = text[separator.upperBound...]
        guard let first = scheme.first, first.isASCII, first.isLowercase,
            scheme.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || "+.-".contains($0)) }), !authority.isEmpty,
            authority.allSatisfy({ $0.isASCII && ($0.isLowercase || $0.isNumber || ".-:[]".contains($0)) })
        else { return nil }
        // The host, and the port after the last colon outside an IPv6 literal's brackets.
        var host = authority
        var port: Substring?
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            host = authority[..<colon]
            port = authority[authority.index(after: colon)...]
        }
        if let port {
            guard let number = Int(port), (1...65535).contains(number), String(number) == port else { return nil }
            let defaultPort = ["https": 443, "http": 80][String(scheme)]
            if number == defaultPort { return nil }
        }
        guard !host.isEmpty, !host.hasPrefix("."), !host.hasSuffix("."), host.first != "[" || host.last == "]",
            host.first == "[" || !host.contains(":")
        else { return nil }
        switch scheme {
        case "https": break
        case "http": guard ["localhost", "127.0.0.1", "[::1]"].contains(host) else { return nil }
        case "file", "data", "javascript", "blob", "about", "ws", "wss", "ftp": return nil
        default: break
        }
        return text
    }

    /// The secrets of a `*_SECRET_FILE` key: one per line, at least 32 characters each; none when
    /// the key is not set.
    mutating func lineSecrets(_ key: String) -> [[UInt8]] {
        guard let secret = secret(key) else { return [] }
        let secrets = secret.value.split(whereSeparator: \.isNewline).map { Array($0.trimmingCharacters(in: .whitespaces).utf8) }
            .filter { !$0.isEmpty }
        if secrets.isEmpty || secrets.contains(where: { $0.count < 32 }) {
            problem("\(key): expected one secret of at least 32 characters per line (openssl rand -hex 32)")
        }
        return secrets
    }

    /// The webhook settings; nil (and no problem) when no endpoint is set, or when a problem was
    /// recorded.
    mutating func webhookSettings() -> WebhookSettings? {
        let endpoints = (optionalString("SIWA_WEBHOOK_URLS") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let timeout = integer("SIWA_WEBHOOK_TIMEOUT", in: 1...60)
        let retryHours = integer("SIWA_WEBHOOK_RETRY_HOURS", in: 72...720)
        guard !endpoints.isEmpty else {
            if optionalString("SIWA_WEBHOOK_SECRET_FILE") != nil { problem("SIWA_WEBHOOK_SECRET_FILE: set without SIWA_WEBHOOK_URLS") }
            return nil
        }
        for endpoint in endpoints {
            let url = URL(string: endpoint)
            let loopback = ["127.0.0.1", "localhost", "::1"].contains(url?.host ?? "")
            if url?.host == nil || !(url?.scheme == "https" || (url?.scheme == "http" && loopback)) || endpoint.utf8.count > 255
                || !endpoint.allSatisfy(\.isASCII)
            {
                problem("SIWA_WEBHOOK_URLS: \(endpoint) is not an https URL (http only to a loopback address) of at most 255 characters")
            }
        }
        if Set(endpoints).count != endpoints.count { problem("SIWA_WEBHOOK_URLS: an endpoint is listed twice") }
        let secrets = lineSecrets("SIWA_WEBHOOK_SECRET_FILE")
        if optionalString("SIWA_WEBHOOK_SECRET_FILE") == nil {
            problem("SIWA_WEBHOOK_SECRET_FILE: required with SIWA_WEBHOOK_URLS")
        }
        guard problems.isEmpty else { return nil }
        return WebhookSettings(
            endpoints: endpoints, secrets: secrets, http: HTTPClientConfiguration(connectTimeout: 3, timeout: Double(timeout)),
            retryHours: retryHours)
    }

    /// What the account page shows of the app.
    mutating func pageSettings() -> PageSettings {
        let name = optionalString("SIWA_APP_NAME")
        if let name,
            name.unicodeScalars.count > PageSettings.maximumNameLength
                || name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            problem("SIWA_APP_NAME: expected at most \(PageSettings.maximumNameLength) characters without control characters")
        }
        return PageSettings(appName: name, showsProgress: boolean("SIWA_PAGE_PROGRESS"))
    }

    /// Apple's domain-association file, read once: nil when the key is unset.
    mutating func domainAssociation() -> DomainAssociation? {
        guard let path = optionalString("SIWA_DOMAIN_ASSOCIATION_FILE") else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            problem("SIWA_DOMAIN_ASSOCIATION_FILE: cannot read \(path)")
            return nil
        }
        guard !data.isEmpty, data.count <= DomainAssociation.maximumBytes else {
            problem("SIWA_DOMAIN_ASSOCIATION_FILE: \(path) is empty or larger than 64 KiB; expected the file Apple gave")
            return nil
        }
        return DomainAssociation(path: path, contents: Array(data))
    }

    /// The app's declared collections, from `SIWA_SYNC_COLLECTIONS`.
    mutating func syncSchema() -> SyncSchema {
        guard let path = optionalString("SIWA_SYNC_COLLECTIONS") else { return .empty }
        guard let data = FileManager.default.contents(atPath: path) else {
            problem("SIWA_SYNC_COLLECTIONS: cannot read \(path)")
            return .empty
        }
        do {
            return try SyncSchema(declaration: Array(data))
        } catch {
            for line in error.problems { problem("SIWA_SYNC_COLLECTIONS: \(path): \(line)") }
            return .empty
        }
    }

    /// The type of the access-token keys `siwa keys rotate` makes.
    mutating func accessTokenAlgorithm() -> AccessTokenAlgorithm {
        guard let algorithm = AccessTokenAlgorithm(rawValue: string("SIWA_ACCESS_TOKEN_ALGORITHM").uppercased()) else {
            problem("SIWA_ACCESS_TOKEN_ALGORITHM: expected ES256 or RS256")
            return .es256
        }
        return algorithm
    }
}

/// Reads typed values from the environment, collecting problems instead of stopping at the first.
struct EnvironmentReader {
    let environment: [String: String]
    var problems: [String] = []

    init(environment: [String: String]) { self.environment = environment }

    mutating func problem(_ text: String) { problems.append(text) }

    private func raw(_ name: String) -> String? {
        if let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty { return value }
        return AppConfig.keys.first { $0.name == name }?.defaultValue
    }

    func optionalString(_ name: String) -> String? {
        guard let value = environment[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    func string(_ name: String) -> String { raw(name) ?? "" }

    mutating func required(_ name: String) -> String {
        guard let value = optionalString(name) else {
            problem("\(name): required")
            return ""
        }
        return value
    }

    /// `host[:port],...` in order, each host at most once.
    mutating func databaseHosts(_ list: String, defaultPort: Int) -> [MariaDB.Configuration.Endpoint] {
        var endpoints: [MariaDB.Configuration.Endpoint] = []
        for item in list.split(separator: ",", omittingEmptySubsequences: false).map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let parts = item.split(separator: ":", omittingEmptySubsequences: false)
            let port = parts.count == 2 ? Int(parts[1]) : defaultPort
            guard !item.isEmpty, parts.count <= 2, !parts[0].isEmpty, let port, (1...65535).contains(port) else {
                problem("SIWA_DB_HOST: expected host or host:port, comma-separated, got \"\(item)\"")
                continue
            }
            endpoints.append(.tcp(host: String(parts[0]), port: port))
        }
        if Set(endpoints.map(\.description)).count != endpoints.count { problem("SIWA_DB_HOST: a host is listed twice") }
        return endpoints
    }

    mutating func integer(_ name: String, in range: ClosedRange<Int>) -> Int {
        guard let text = raw(name), let value = Int(text), range.contains(value) else {
            problem("\(name): expected an integer in \(range.lowerBound)...\(range.upperBound), got \"\(raw(name) ?? "")\"")
            return range.lowerBound
        }
        return value
    }

    mutating func boolean(_ name: String) -> Bool {
        switch raw(name)?.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default:
            problem("\(name): expected true or false")
            return true
        }
    }

    mutating func octal(_ name: String) -> UInt32 {
        guard let text = raw(name), let value = UInt32(text, radix: 8), value <= 0o777 else {
            problem("\(name): expected octal permissions such as 0660, got \"\(raw(name) ?? "")\"")
            return 0o600
        }
        return value
    }

    mutating func logFormat(_ name: String) -> LogFormat {
        guard let format = LogFormat(rawValue: string(name).lowercased()) else {
            problem("\(name): expected text or json")
            return .text
        }
        return format
    }

    mutating func logLevel(_ name: String) -> Logger.Level {
        guard let text = raw(name), let level = Logger.Level(rawValue: text.lowercased()) else {
            problem("\(name): expected trace, debug, info, notice, warning, error or critical")
            return .info
        }
        return level
    }

    /// Reads the secret from the file named by `name`; the file must not be readable by others.
    mutating func secret(_ name: String) -> Secret? {
        guard let path = optionalString(name) else { return nil }
        var status = stat()
        guard stat(path, &status) == 0 else {
            problem("\(name): cannot read \(path)")
            return nil
        }
        guard status.st_mode & 0o007 == 0 else {
            problem("\(name): \(path) is readable by other users; chmod 0600 or 0640 it")
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            problem("\(name): cannot read \(path)")
            return nil
        }
        // A trailing newline from `echo secret > file` is not part of the secret.
        var text = String(decoding: data, as: UTF8.self)
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        return Secret(text)
    }

    /// A misspelt key would otherwise be silently ignored.
    mutating func rejectUnknownKeys() {
        let known = Set(AppConfig.keys.map(\.name))
        for name in environment.keys.sorted() where name.hasPrefix("SIWA_") && !name.hasPrefix("SIWA_TEST_") {
            if !known.contains(name) { problem("\(name): unknown key") }
        }
    }
}
