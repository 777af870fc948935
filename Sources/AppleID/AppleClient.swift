package import CoreMetrics
import Foundation
package import HTTPClient
import JOSE
import StrictJSON
import Telemetry

/// Apple's `TokenResponse` (`POST /auth/token`).
package struct AppleTokenResponse: Sendable, Equatable, Decodable {
    package var accessToken: String
    package var tokenType: String
    package var expiresIn: Int
    /// Only for the `authorization_code` grant; a `refresh_token` grant returns none.
    package var refreshToken: String?
    package var idToken: String?

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case idToken = "id_token"
    }
}

extension AppleTokenResponse {
    /// The `sub` and `aud` of `id_token`, read without checking its signature: the answer came
    /// over TLS straight from Apple's token endpoint, which OpenID Connect Core §3.1.3.7 accepts in
    /// place of the signature. Nil when there is no `id_token` or it cannot be read.
    package var idTokenIdentity: (subject: String, audience: String)? {
        guard let idToken, let payload = try? CompactJWS(idToken).decodePayload(),
            let subject = try? payload.string("sub"), let audience = IdentityClaims.audience(of: payload)
        else { return nil }
        return (subject, audience)
    }
}

/// A failed call to Apple, with Apple's `ErrorResponse` mapped to a code.
package struct AppleAPIError: Error, Equatable, CustomStringConvertible {
    package enum Code: String, Sendable, Equatable {
        // Apple's documented `error` values.
        case invalidRequest = "invalid_request"
        case invalidClient = "invalid_client"
        case invalidGrant = "invalid_grant"
        case unauthorizedClient = "unauthorized_client"
        case unsupportedGrantType = "unsupported_grant_type"
        case invalidScope = "invalid_scope"
        /// Another status or body than Apple documents (5xx included): worth retrying later.
        case unexpectedResponse = "unexpected_response"
        /// No response: connection, TLS or timeout failure.
        case unreachable
    }

    package let code: Code
    package let status: Int?
    package let reason: String

    package init(_ code: Code, status: Int? = nil, reason: String = "") {
        self.code = code
        self.status = status
        self.reason = reason
    }

    package var description: String {
        "AppleAPIError.\(code.rawValue)" + (status.map { " (HTTP \($0))" } ?? "") + (reason.isEmpty ? "" : ": \(reason)")
    }

    /// Errors compare by code only.
    package static func == (lhs: AppleAPIError, rhs: AppleAPIError) -> Bool { lhs.code == rhs.code }
}

/// Calls Apple's Sign in with Apple REST endpoints through one thread's `HTTPClient`.
package final class AppleClient {
    /// `https://appleid.apple.com` in production, the emulator's URL in development and tests.
    package let baseURL: String
    private let http: HTTPClient
    private let secrets: ClientSecretFactory
    private let metrics = AppleCallMetrics()

    package init(baseURL: String, http: HTTPClient, secrets: ClientSecretFactory) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.http = http
        self.secrets = secrets
    }

    /// Exchanges an authorization code (`grant_type=authorization_code`).
    /// - Parameters:
    ///   - clientID: the client the code was issued to (the bundle id for native codes).
    ///   - redirectURI: only for codes from the web flow; Apple refuses it for native codes.
    package func exchangeCode(_ code: String, clientID: String, redirectURI: String?) throws -> AppleTokenResponse {
        var fields = [
            ("client_id", clientID), ("client_secret", try secret(clientID)), ("code", code), ("grant_type", "authorization_code"),
        ]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return try tokenCall(fields)
    }

    /// Validates a refresh token (`grant_type=refresh_token`), with the client id that minted it.
    package func refresh(_ refreshToken: String, clientID: String) throws -> AppleTokenResponse {
        try tokenCall([
            ("client_id", clientID), ("client_secret", try secret(clientID)), ("grant_type", "refresh_token"),
            ("refresh_token", refreshToken),
        ])
    }

    /// Which kind of token is revoked.
    package enum TokenKind: String, Sendable {
        case refreshToken = "refresh_token"
        case accessToken = "access_token"
    }

    /// Revokes a token (`POST /auth/revoke`). Apple answers 200 both when it revoked the token and
    /// when the token was already invalid; both return normally.
    package func revoke(_ token: String, kind: TokenKind, clientID: String) throws {
        let request = HTTPRequest.form(
            url: baseURL + "/auth/revoke",
            [("client_id", clientID), ("client_secret", try secret(clientID)), ("token", token), ("token_type_hint", kind.rawValue)])
        try metrics.measure("revoke") {
            let response = try send(request)
            guard response.status == 200 else { throw Self.error(from: response) }
        }
    }

    /// An access token of the `client_credentials` grant with scope `user.migration`, for
    /// `usermigrationinfo` (team transfer).
    package func migrationAccessToken(clientID: String) throws -> AppleTokenResponse {
        try tokenCall([
            ("client_id", clientID), ("client_secret", try secret(clientID)), ("grant_type", "client_credentials"),
            ("scope", "user.migration"),
        ])
    }

    /// The sending team's side of a transfer: the `transfer_sub` of the user `sub` for the team
    /// `target` (`POST /auth/usermigrationinfo` with `sub` and `target`).
    package func transferSub(of sub: String, to target: String, clientID: String, accessToken: String) throws -> String {
        struct Answer: Decodable {
            let transferSub: String
            enum CodingKeys: String, CodingKey { case transferSub = "transfer_sub" }
        }
        let answer = try migrationCall(
            [("sub", sub), ("target", target), ("client_id", clientID), ("client_secret", try secret(clientID))], accessToken: accessToken,
            as: Answer.self)
        return answer.transferSub
    }

    /// What the receiving team learns of a transferred user.
    package struct MigratedUser: Sendable, Equatable, Decodable {
        /// The user's `sub` for the receiving team.
        package var sub: String
        package var email: String?
        package var isPrivateEmail: Bool?

        enum CodingKeys: String, CodingKey {
            case sub, email
            case isPrivateEmail = "is_private_email"
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            sub = try container.decode(String.self, forKey: .sub)
            email = try container.decodeIfPresent(String.self, forKey: .email)
            // Apple's notifications send it as a string, its documentation as a boolean: both.
            if let flag = try? container.decodeIfPresent(Bool.self, forKey: .isPrivateEmail) {
                isPrivateEmail = flag
            } else {
                isPrivateEmail = (try? container.decodeIfPresent(String.self, forKey: .isPrivateEmail)).map { $0 == "true" }
            }
        }
    }

    /// The receiving team's side of a transfer: the user's new `sub` (and email) for a
    /// `transfer_sub` (`POST /auth/usermigrationinfo` with `transfer_sub`).
    package func migratedUser(transferSub: String, clientID: String, accessToken: String) throws -> MigratedUser {
        try migrationCall(
            [("transfer_sub", transferSub), ("client_id", clientID), ("client_secret", try secret(clientID))], accessToken: accessToken,
            as: MigratedUser.self)
    }

    private func migrationCall<Answer: Decodable>(_ fields: [(String, String)], accessToken: String, as type: Answer.Type) throws -> Answer
    {
        try metrics.measure("usermigrationinfo") {
            let response = try send(
                .form(
                    url: baseURL + "/auth/usermigrationinfo", fields,
                    headers: [("Accept", "application/json"), ("Authorization", "Bearer " + accessToken)]))
            guard response.status == 200 else { throw Self.error(from: response) }
            do {
                return try JSONDecoder().decode(Answer.self, from: Data(response.body))
            } catch {
                throw AppleAPIError(.unexpectedResponse, status: 200, reason: "the usermigrationinfo answer is not \(Answer.self)")
            }
        }
    }

    /// Fetches Apple's key set (`GET /auth/keys`) with its `Cache-Control: max-age`.
    package static func fetchKeys(baseURL: String, http: HTTPClient, metrics: AppleCallMetrics = AppleCallMetrics()) throws
        -> AppleKeyCache.Fetched
    {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        return try metrics.measure("keys") {
            let response: HTTPResponse
            do {
                response = try http.send(HTTPRequest(method: "GET", url: base + "/auth/keys", headers: [("Accept", "application/json")]))
            } catch let error as HTTPClientError {
                throw AppleAPIError(.unreachable, reason: error.description)
            }
            guard response.status == 200 else {
                throw AppleAPIError(.unexpectedResponse, status: response.status, reason: "GET /auth/keys")
            }
            return AppleKeyCache.Fetched(body: response.body, maxAge: CacheControl.maxAge(response.header("cache-control")))
        }
    }

    private func secret(_ clientID: String) throws -> String {
        do {
            return try secrets.secret(for: clientID)
        } catch {
            throw AppleAPIError(.invalidClient, reason: "could not sign the client secret: \(error)")
        }
    }

    private func tokenCall(_ fields: [(String, String)]) throws -> AppleTokenResponse {
        try metrics.measure("token") {
            let response = try send(.form(url: baseURL + "/auth/token", fields, headers: [("Accept", "application/json")]))
            guard response.status == 200 else { throw Self.error(from: response) }
            do {
                return try JSONDecoder().decode(AppleTokenResponse.self, from: Data(response.body))
            } catch {
                throw AppleAPIError(.unexpectedResponse, status: 200, reason: "the token response is not a TokenResponse")
            }
        }
    }

    private func send(_ request: HTTPRequest) throws -> HTTPResponse {
        do {
            return try http.send(request)
        } catch let error as HTTPClientError {
            throw AppleAPIError(.unreachable, reason: error.description)
        }
    }

    /// Maps Apple's `{"error": "..."}` to a code; anything else is an unexpected response.
    static func error(from response: HTTPResponse) -> AppleAPIError {
        struct ErrorResponse: Decodable { let error: String }
        if let body = try? JSONDecoder().decode(ErrorResponse.self, from: Data(response.body)),
            let code = AppleAPIError.Code(rawValue: body.error), code != .unexpectedResponse, code != .unreachable
        {
            return AppleAPIError(code, status: response.status)
        }
        return AppleAPIError(.unexpectedResponse, status: response.status)
    }
}

/// Calls to Apple in the process's metrics: `siwa_apple_requests_total` by endpoint and result (`ok`
/// or the `AppleAPIError` code), and their durations.
package struct AppleCallMetrics: Sendable {
    private let calls: MetricFamily<Counter>
    private let durations: MetricFamily<CoreMetrics.Timer>

    package init(factory: any MetricsFactory = MetricsSystem.factory) {
        calls = MetricFamily(counter: MetricNames.appleCalls, labels: ["endpoint", "result"], factory: factory)
        durations = MetricFamily(timer: MetricNames.appleCallDuration, labels: ["endpoint"], factory: factory)
    }

    /// Runs the call `body` to `endpoint`, counting its result and recording its duration.
    func measure<T>(_ endpoint: String, _ body: () throws -> T) throws -> T {
        let started = ContinuousClock.now
        defer { durations[endpoint].recordSince(started) }
        do {
            let value = try body()
            calls[endpoint, "ok"].increment()
            return value
        } catch let error as AppleAPIError {
            calls[endpoint, error.code.rawValue].increment()
            throw error
        } catch {
            calls[endpoint, "error"].increment()
            throw error
        }
    }
}
