import AppleID
import FastCGI
import Foundation
import HTTPClient
import Identity
import JOSE
import Logging
import MariaDB
import SIWAFixtures
import SIWATestSupport
import Server
import SiwaConfig
import StrictJSON
import Synchronization
import Telemetry
import WebForms

/// The application in process: requests go through `Worker.respond(to:)` (the `Request ->
/// Response` boundary) with a real MariaDB, Apple's real keys (plus a test key for the web flow's
/// tokens), a settable clock, and a small HTTP server standing in for Apple's `/auth/token` and
/// `/auth/revoke` that records what it was sent.
final class HandlerHarness {
    /// The bundle id (native) and Services ID (web) the harness accepts by default: the audiences
    /// of two real Apple tokens in the fixtures.
    static let bundleID = "com.fullqueuedeveloper.FQAuthSampleiOSApp"
    static let servicesID = "jp.yauth.signin.service2"
    /// The Return URL registered for the Services ID's credentials that apps post.
    static let appRedirectURI = "https://app.example.com/apple-callback"
    /// The `redirectUri` member of such a sign-in.
    static let appRedirectMember = #""redirectUri":"https://app.example.com/apple-callback""#
    static let publicURL = "https://auth.example.com"

    let database: TestDatabase
    let connection: Connection
    let clock: ManualClock
    let application: Application
    let worker: Worker
    let apple: TestHTTPServer
    /// What the stand-in for Apple issued; a test records the owner of each code it sends.
    let issued: IssuedTokens
    /// The key that signs the web flow's identity tokens, published with Apple's real keys.
    let webKey: RSAPrivateKey
    static let webKeyID = "test-web-key"
    private let directory: String

    /// - Parameters:
    ///   - environment: settings over the harness's own; `SIWA_DB_TIMEOUT` and
    ///     `SIWA_DB_CONNECT_TIMEOUT` among them apply to the test database.
    ///   - server: the MariaDB server of the test schema; nil for the test server.
    init(
        bundleIDs: [String] = [bundleID], servicesID: String? = servicesID, time: Double = 1_700_000_000,
        environment extra: [String: String] = [:], metrics: PrometheusExporter? = nil, server: Configuration? = nil
    ) throws {
        database = try TestDatabase.migrated(server: server)
        connection = try database.connect()
        clock = ManualClock(time)
        directory = NSTemporaryDirectory() + "siwa-handlers-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory + "/access", withIntermediateDirectories: true)
        _ = try AccessTokenKeyFiles.add(.es256, to: directory + "/access", now: Date())
        try HandlerHarness.write(try P256PrivateKey().pem(), to: directory + "/apple.p8")
        try HandlerHarness.write("k1 \(Data((0..<32).map { UInt8($0) }).base64EncodedString())\n", to: directory + "/data_keys")
        let tokens = try IssuedTokens()
        issued = tokens
        apple = try TestHTTPServer { request in HandlerHarness.answerLikeApple(request, issued: tokens) }
        var environment = [
            "SIWA_DB_SOCKET": "/unused", "SIWA_DB_NAME": "unused", "SIWA_DB_USER": "unused",
            "SIWA_APPLE_TEAM_ID": "TEAMID1234", "SIWA_APPLE_KEY_ID": "KEYID12345", "SIWA_APPLE_PRIVATE_KEY_FILE": directory + "/apple.p8",
            "SIWA_APPLE_BUNDLE_IDS": bundleIDs.joined(separator: ","), "SIWA_APPLE_BASE_URL": apple.baseURL,
            // The real tokens' raw nonces are unknown; the web flow's tokens carry theirs.
            "SIWA_APPLE_REQUIRE_NONCE": "false",
            "SIWA_PUBLIC_URL": HandlerHarness.publicURL, "SIWA_ACCESS_KEYS_DIR": directory + "/access",
            "SIWA_DATA_KEYS_FILE": directory + "/data_keys",
        ]
        environment["SIWA_APPLE_SERVICES_ID"] = servicesID
        // An app's credential for the Services ID (Android, Sign in with Apple JS) names this one.
        environment["SIWA_APPLE_REDIRECT_URIS"] = servicesID.map { "\($0)=\(HandlerHarness.appRedirectURI)" }
        environment.merge(extra) { $1 }
        var config = try AppConfig(environment: environment, clock: clock)
        let configured = config.database
        config.database = database.configuration
        if extra["SIWA_DB_TIMEOUT"] != nil { config.database.readWriteTimeout = configured.readWriteTimeout }
        if extra["SIWA_DB_CONNECT_TIMEOUT"] != nil { config.database.connectTimeout = configured.connectTimeout }
        webKey = try RSAPrivateKey()
        var keys = try AppleKeySet.parse(AppleFixtures.keySet())
        keys.append(AppleKey(keyID: HandlerHarness.webKeyID, algorithm: "RS256", publicKey: webKey.publicKey))
        application = Application(
            config: config, logger: Logger(label: "handler-tests"), clock: clock, appleKeys: StaticAppleKeys(keys), metrics: metrics)
        worker = application.makeWorker(index: 0)
    }

    deinit {
        worker.close()
        application.stop()
        apple.stop()
        connection.close()
        database.drop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private static func write(_ text: String, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown)
        }
    }

    /// Apple's `/auth/token` (both grants) and `/auth/revoke`, in Apple's formats. The refresh
    /// tokens it issues name the client id they were minted for, so tests can see which token a
    /// later call carried.
    static func answerLikeApple(_ request: TestHTTPServer.Request, issued: IssuedTokens) -> TestHTTPServer.Response {
        let form = Dictionary(FormEncoding.fields(request.bodyText) ?? [], uniquingKeysWith: { $1 })
        if issued.hanging.load(ordering: .relaxed) { Thread.sleep(forTimeInterval: 1.5) }
        if issued.failing.load(ordering: .relaxed) { return TestHTTPServer.Response(status: 500, body: "") }
        switch (request.path, form["grant_type"]) {
        case ("/auth/token", "authorization_code"):
            guard let code = form["code"], !code.hasPrefix("spent") else {
                return TestHTTPServer.Response(status: 400, body: #"{"error":"invalid_grant"}"#)
            }
            let number = issued.count.wrappingAdd(1, ordering: .relaxed).newValue
            // Apple's id_token names the identity the code was issued to (unknown codes: nobody).
            let owner = issued.owner(of: code) ?? (subject: "nobody", audience: form["client_id"] ?? "")
            let idToken = try? issued.idToken(subject: owner.subject, audience: owner.audience)
            let body = JSONText.object([
                ("access_token", .string("a.\(number)")), ("token_type", .string("Bearer")), ("expires_in", .integer(3600)),
                ("refresh_token", .string("r.\(form["client_id"] ?? "").\(number)")), ("id_token", .string(idToken ?? "")),
            ])
            return TestHTTPServer.Response(status: 200, headers: [("Content-Type", "application/json")], body: body)
        case ("/auth/token", "refresh_token"):
            if issued.refuses(form["refresh_token"]) { return TestHTTPServer.Response(status: 400, body: #"{"error":"invalid_grant"}"#) }
            let body = JSONText.object([
                ("access_token", .string("a.refreshed")), ("token_type", .string("Bearer")), ("expires_in", .integer(3600)),
                ("id_token", .string("id.refreshed")),
            ])
            return TestHTTPServer.Response(status: 200, headers: [("Content-Type", "application/json")], body: body)
        case ("/auth/revoke", _):
            return TestHTTPServer.Response(status: 200)
        default:
            return TestHTTPServer.Response(status: 400, body: #"{"error":"unsupported_grant_type"}"#)
        }
    }

    /// The form fields of every call Apple received at `path`.
    func appleCalls(_ path: String) -> [[String: String]] {
        apple.receivedRequests.filter { $0.path == path }.map {
            Dictionary(FormEncoding.fields($0.bodyText) ?? [], uniquingKeysWith: { $1 })
        }
    }

    /// The background jobs on the harness's database and Apple.
    func jobs() throws -> BackgroundJobs? {
        guard let apple = application.apple, let sessions = application.config.sessions else { return nil }
        return BackgroundJobs(
            apple: apple, settings: sessions, database: connection, logger: Logger(label: "handler-tests-jobs"),
            webhooks: application.config.webhooks, clock: clock, syncSchema: application.config.syncSchema)
    }

    // MARK: - Requests

    /// Sends a request through the harness's worker, or through `worker` (one of another thread).
    func send(
        _ method: String, _ path: String, query: String = "", json: String? = nil, form: String? = nil, headers: [(String, String)] = [],
        via worker: Worker? = nil
    ) -> Response {
        var fields = HTTPHeaders(headers)
        if json != nil { fields.add("content-type", "application/json") }
        if form != nil { fields.add("content-type", "application/x-www-form-urlencoded") }
        let body = Array((json ?? form ?? "").utf8)
        return (worker ?? self.worker).respond(to: Request(method: method, path: path, query: query, headers: fields, body: body))
    }

    func bearer(_ token: String) -> [(String, String)] { [("authorization", "Bearer " + token)] }

    /// Signs in natively with `token` (and `code`) at `time`.
    func signIn(_ token: String, code: String? = nil, user: String? = nil, at time: Double, extra: String = "") -> Response {
        clock.set(time)
        var members = [#""identityToken":"\#(token)""#]
        if let code { members.append(#""authorizationCode":"\#(code)""#) }
        if let user { members.append(#""user":"\#(user)""#) }
        if !extra.isEmpty { members.append(extra) }
        return send("POST", "/auth/apple", json: "{" + members.joined(separator: ",") + "}")
    }

    func count(_ sql: SQL, _ binds: any DatabaseValueConvertible...) throws -> Int {
        try connection.query(sql, binds: binds)[0].decode(at: 0)
    }
}

/// What the stand-in for Apple issued: how many refresh tokens, and for whom each code was issued.
final class IssuedTokens: Sendable {
    let count = Atomic<Int>(0)
    /// Whether Apple hangs: each answer comes after 1.5 s, past a 1 s timeout.
    let hanging = Atomic<Bool>(false)
    /// Whether Apple fails: each answer is a 500 with no body.
    let failing = Atomic<Bool>(false)
    /// Client ids whose refresh tokens Apple refuses with `invalid_grant` (consent withdrawn).
    private let refusedClients = Mutex<Set<String>>([])
    private let owners = Mutex<[String: (subject: String, audience: String)]>([:])
    private let key: RSAPrivateKey

    init() throws { key = try RSAPrivateKey() }

    /// Records that Apple issued `code` to `subject` for the client `audience`.
    func issue(_ code: String, subject: String, audience: String) {
        owners.withLock { $0[code] = (subject, audience) }
    }

    func owner(of code: String) -> (subject: String, audience: String)? { owners.withLock { $0[code] } }

    /// From now on Apple refuses the refresh tokens it minted for `clientID`.
    func refuseRefreshTokens(of clientID: String) { refusedClients.withLock { _ = $0.insert(clientID) } }

    /// Whether Apple refuses `refreshToken` (named `r.<client id>.<n>`).
    func refuses(_ refreshToken: String?) -> Bool {
        refusedClients.withLock { clients in clients.contains { refreshToken?.hasPrefix("r.\($0).") == true } }
    }

    /// An `id_token` as Apple's token endpoint returns it.
    func idToken(subject: String, audience: String) throws -> String {
        let claims = JSONText.object([
            ("iss", .string("https://appleid.apple.com")), ("aud", .string(audience)), ("exp", .integer(2_000_000_000)),
            ("iat", .integer(1_700_000_000)), ("sub", .string(subject)),
        ])
        let header = JSONText.object([("kid", .string("token-endpoint")), ("alg", .string("RS256"))])
        return try CompactJWS.serialize(header: header, claims: claims, sign: key.signature(for:))
    }
}

/// A response's body as a JSON object.
extension Response {
    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> JSONObject { try JSONObject(parsing: text) }

    func header(_ name: String) -> String? { headers.first { $0.name.lowercased() == name.lowercased() }?.value }

    /// The `name=value` of a `Set-Cookie` header for `name`.
    func cookie(_ name: String) -> String? {
        headers.filter { $0.name == "Set-Cookie" }.map(\.value).first { $0.hasPrefix(name + "=") }
            .map { String($0.dropFirst(name.count + 1).prefix { $0 != ";" }) }
    }
}
