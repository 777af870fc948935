package import FastCGI
import Foundation
import HTTPClient
import JOSE
import StrictJSON
import Synchronization
import WebForms

/// The Apple ID emulator: Apple's Sign in with Apple endpoints (`/auth/keys`, `/auth/authorize`,
/// `/auth/token`, `/auth/revoke`) and a test-only admin API (`/admin/...`), as plain
/// `Request -> Response` functions over one shared store.
package final class Emulator: Sendable {
    let configuration: EmulatorConfiguration
    let store: EmulatorStore
    /// The client-secret check of each team, by team id.
    let secrets: [String: ClientSecretCheck]
    let adminSecret: String?
    let clock: @Sendable () -> Int64
    /// How Apple's server-called endpoints behave: latency, failures, a hang (`POST /admin/behaviour`).
    let behaviour = Mutex(Behaviour())

    /// What `POST /admin/behaviour` sets for `/auth/token`, `/auth/revoke` and
    /// `/auth/usermigrationinfo`: Apple's real latency, its 5xx answers, its hangs.
    struct Behaviour: Codable {
        /// Milliseconds before each answer.
        var latencyMs = 0
        /// The share of calls (0 to 1) answered 500 with no body, as Apple does in an outage.
        var failureRate = 0.0
        /// Whether each call waits a minute before its answer.
        var hang = false
    }

    /// Seconds a key set may be cached by its readers.
    static let keySetMaxAge = 3600
    /// An authorization code's lifetime (Apple: five minutes).
    static let codeLifetime: Int64 = 300
    /// Apple's access tokens last an hour.
    static let accessTokenLifetime: Int64 = 3600
    /// Identity tokens from the token endpoint and the web flow last a day, native ones ten
    /// minutes (docs/APPLE-PROTOCOL.md §4, observed lifetimes).
    static let webIdentityTokenLifetime: Int64 = 86_400
    static let nativeIdentityTokenLifetime: Int64 = 600

    /// - Throws: `EmulatorConfigurationError` when a key or the state file cannot be read.
    package init(configuration: EmulatorConfiguration, clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) })
        throws
    {
        try configuration.validate()
        self.configuration = configuration
        self.clock = clock
        self.store = try EmulatorStore(file: configuration.stateFile, savesChanges: configuration.saveChanges, now: clock())
        var secrets: [String: ClientSecretCheck] = [:]
        for team in configuration.teams {
            secrets[team.teamID] = ClientSecretCheck(
                teamID: team.teamID, keyID: team.keyID, teamKey: try EmulatorConfiguration.teamPublicKey(file: team.teamKeyFile))
        }
        self.secrets = secrets
        self.adminSecret = try configuration.adminSecret()
    }

    /// `GET /`: what this is, with links.
    func index() -> Response {
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Apple ID emulator</title></head><body style="font-family: -apple-system, Helvetica, Arial, sans-serif; max-width: 40rem; \
            margin: 2rem auto; padding: 0 1rem; line-height: 1.4">
            <h1>Apple ID emulator</h1>
            <p>A stand-in for Sign in with Apple's servers (appleid.apple.com) for development and tests. It follows Apple's formats: \
            identity tokens, the authorize page, the token and revoke endpoints, server-to-server notifications. Nothing here is Apple.</p>
            <ul><li><a href="/auth/keys">/auth/keys</a>: the signing keys (JWKS)</li>
            <li>/auth/authorize: the consent page the web sign-in is sent to</li>
            <li>/auth/token, /auth/revoke, /auth/usermigrationinfo: the endpoints the server calls</li>
            <li>/admin/…: test users, native sign-ins, notifications (a Bearer admin secret; see the project's docs/EMULATOR.md)</li></ul>
            </body></html>
            """
        return Response(status: 200, contentType: "text/html; charset=utf-8", body: Array(html.utf8))
    }

    /// Answers one request; never throws.
    package func respond(to request: Request) -> Response {
        do {
            switch (request.method, request.path) {
            case ("GET", "/"): return index()
            case ("GET", "/auth/keys"): return keySet()
            case ("GET", SignInWithAppleJS.path): return SignInWithAppleJS.script()
            case ("GET", "/auth/authorize"): return try authorize(request)
            case ("POST", "/auth/authorize"): return try decide(request)
            case ("POST", "/auth/token"): return try behaving { try token(request) }
            case ("POST", "/auth/revoke"): return try behaving { try revoke(request) }
            case ("POST", "/auth/usermigrationinfo"): return try behaving { try userMigrationInfo(request) }
            case (_, let path) where path.hasPrefix("/admin/"): return try admin(request)
            case (_, "/auth/keys"), (_, "/auth/authorize"), (_, "/auth/token"), (_, "/auth/revoke"), (_, "/auth/usermigrationinfo"):
                return Response(status: 405, contentType: "text/plain", body: Array("Method Not Allowed\n".utf8))
            default:
                return Response(status: 404, contentType: "text/plain", body: Array("Not Found\n".utf8))
            }
        } catch let error as AppleError {
            return error.response
        } catch let error as AdminError {
            return error.response
        } catch let error as AuthorizeError {
            return error.response
        } catch {
            return AdminError(500, "internal_error", "\(error)").response
        }
    }

    /// Answers as the configured behaviour says: after the latency (or a minute's hang), a 500
    /// for the failing share of calls, else `answer()`.
    private func behaving(_ answer: () throws -> Response) throws -> Response {
        let now = behaviour.withLock { $0 }
        let delay = now.hang ? 60_000 : now.latencyMs
        if delay > 0 { Thread.sleep(forTimeInterval: Double(delay) / 1000) }
        if now.failureRate > 0, Double.random(in: 0..<1) < now.failureRate {
            return Response(status: 500, contentType: "text/plain", body: [])
        }
        return try answer()
    }

    /// `GET /auth/keys`: the key set, shaped like Apple's.
    func keySet() -> Response {
        let keys = store.read { $0.signingKeys.map(\.jwk) }
        let body = #"{"keys":["# + keys.joined(separator: ",") + "]}"
        return Response(
            status: 200, contentType: "application/json;charset=UTF-8",
            headers: [("Cache-Control", "max-age=\(Self.keySetMaxAge)")], body: Array(body.utf8))
    }

    /// The key new tokens are signed with.
    var currentKey: SigningKey { store.read { $0.signingKeys[0] } }
}

/// An error of Apple's token and revoke endpoints: 400 with `{"error": code}` (Apple's
/// `ErrorResponse`), with an `error_description` where Apple has been seen to add one.
struct AppleError: Error, Equatable {
    enum Code: String {
        case invalidRequest = "invalid_request"
        case invalidClient = "invalid_client"
        case invalidGrant = "invalid_grant"
        case unauthorizedClient = "unauthorized_client"
        case unsupportedGrantType = "unsupported_grant_type"
        case invalidScope = "invalid_scope"
    }

    let code: Code
    let description: String?

    init(_ code: Code, _ description: String? = nil) {
        self.code = code
        self.description = description
    }

    var response: Response {
        let body = JSONText.object([("error", .string(code.rawValue)), ("error_description", description.map { .string($0) })])
        return Response.apple(status: 400, body: body)
    }
}

extension Response {
    /// A response of Apple's token endpoint: the content type and cache headers Apple sends.
    static func apple(status: Int, body: String) -> Response {
        Response(
            status: status, contentType: "application/json;charset=ISO-8859-1",
            headers: [("Cache-Control", "no-store"), ("Pragma", "no-cache")], body: Array(body.utf8))
    }
}

/// The fields of a form-encoded body or query string, each name at most once.
struct FormFields {
    private let fields: [String: String]

    /// - Throws: `AppleError(.invalidRequest)` for malformed encoding or a repeated name.
    init(_ text: String) throws {
        guard let pairs = FormEncoding.fields(text) else { throw AppleError(.invalidRequest) }
        var fields: [String: String] = [:]
        for (name, value) in pairs {
            guard fields[name] == nil else { throw AppleError(.invalidRequest) }
            fields[name] = value
        }
        self.fields = fields
    }

    /// A form-encoded request body; Apple answers other content types with `invalid_client`.
    init(body request: Request) throws {
        let type = request.headers["content-type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/x-www-form-urlencoded" else { throw AppleError(.invalidClient) }
        try self.init(String(decoding: request.body, as: UTF8.self))
    }

    subscript(_ name: String) -> String? {
        guard let value = fields[name], !value.isEmpty else { return nil }
        return value
    }

    /// A field that must be present.
    func required(_ name: String) throws -> String {
        guard let value = self[name] else { throw AppleError(.invalidRequest) }
        return value
    }
}

extension Request {
    /// The token of an `Authorization: Bearer` header (the admin secret, a migration access token).
    var bearerToken: String? {
        headers["authorization"].flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
    }
}
