import AppleID
import AppleIDEmulator
import FastCGI
import Foundation
import HTTPClient
import JOSE
import Synchronization
import Testing
import WebForms

/// An emulator in process, with a team key, an admin secret, a movable clock and a state file in a
/// temporary directory, and the calls a client of Apple makes.
final class EmulatorHarness: Sendable {
    static let teamID = "TEAMID0001"
    static let keyID = "KEYID00001"
    static let bundleID = "com.example.app"
    static let servicesID = "com.example.web"
    static let redirectURI = "https://app.example.com/auth/callback"
    static let adminSecret = "admin-secret-0123456789"
    /// The second team, which transfers move clients to.
    static let teamB = "TEAMID0002"
    static let keyIDB = "KEYID00002"

    let directory: String
    let teamKey: P256PrivateKey
    let teamKeyB: P256PrivateKey
    let configuration: EmulatorConfiguration
    let emulator: Emulator
    private let time = TestTime()

    init(
        adminSecret: Bool = true, notificationURL: String? = nil, directory: String? = nil, teamKey: P256PrivateKey? = nil,
        saveChanges: Bool = true
    ) throws {
        let directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("emulator-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.teamKey = try teamKey ?? P256PrivateKey()
        try self.teamKey.pem().write(toFile: directory + "/team.p8", atomically: true, encoding: .utf8)
        teamKeyB = try P256PrivateKey()
        try teamKeyB.pem().write(toFile: directory + "/team_b.p8", atomically: true, encoding: .utf8)
        try Self.adminSecret.write(toFile: directory + "/admin_secret", atomically: true, encoding: .utf8)
        configuration = EmulatorConfiguration(
            socket: directory + "/emulator.sock", stateFile: directory + "/state.json", teamID: Self.teamID, keyID: Self.keyID,
            teamKeyFile: directory + "/team.p8",
            clients: [.init(id: Self.bundleID), .init(id: Self.servicesID, redirectURIs: [Self.redirectURI])],
            adminSecretFile: adminSecret ? directory + "/admin_secret" : nil, notificationURL: notificationURL,
            otherTeams: [.init(teamID: Self.teamB, keyID: Self.keyIDB, teamKeyFile: directory + "/team_b.p8")], saveChanges: saveChanges)
        let time = self.time
        emulator = try Emulator(configuration: configuration, clock: { time.now })
    }

    var now: Int64 { time.now }
    func advance(_ seconds: Int64) { time.advance(seconds) }

    /// A client secret for `clientID` made by the same code `siwa` uses.
    func secret(
        for clientID: String, key: P256PrivateKey? = nil, keyID: String = keyID, teamID: String = teamID, issuedAt: Int64? = nil,
        lifetime: Int = 86_400
    ) throws -> String {
        let factory = ClientSecretFactory(teamID: teamID, keyID: keyID, privateKey: key ?? teamKey, lifetime: lifetime)
        return try factory.make(for: clientID, issuedAt: Int(issuedAt ?? now))
    }

    func request(_ method: String, _ path: String, query: String = "", headers: [(String, String)] = [], body: [UInt8] = []) -> Response {
        emulator.respond(to: Request(method: method, path: path, query: query, headers: HTTPHeaders(headers), body: body))
    }

    /// A form post as Apple's clients send it.
    func post(_ path: String, _ fields: [(String, String)], contentType: String = "application/x-www-form-urlencoded") -> Response {
        let body = fields.map { FormEncoding.encode($0.0) + "=" + FormEncoding.encode($0.1) }.joined(separator: "&")
        return request("POST", path, headers: [("Content-Type", contentType)], body: Array(body.utf8))
    }

    /// An admin call with the admin secret; the JSON answer parsed.
    @discardableResult
    func admin(_ method: String, _ path: String, _ json: String = "{}", expect status: Int = 200) throws -> [String: Any] {
        let response = request(method, path, headers: [("Authorization", "Bearer " + Self.adminSecret)], body: Array(json.utf8))
        #expect(response.status == status, "\(method) \(path): \(response.text)")
        guard !response.body.isEmpty else { return [:] }
        return try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    func createUser(_ json: String = #"{"email":"jane@example.com","firstName":"Jane","lastName":"Appleseed"}"#) throws -> (
        id: String, sub: String
    ) {
        let user = try admin("POST", "/admin/users", json, expect: 201)
        return (try #require(user["id"] as? String), try #require(user["sub"] as? String))
    }

    /// A native sign-in through the admin API: identity token, code and `user` JSON.
    func nativeSignIn(user: String, client: String = bundleID, nonce: String? = "raw-nonce-1", extra: String = "") throws -> (
        token: String, code: String, user: String?
    ) {
        let nonceMember = nonce.map { #","nonce":"\#($0)""# } ?? ""
        let answer = try admin("POST", "/admin/sign-in", #"{"userId":"\#(user)","clientId":"\#(client)"\#(nonceMember)\#(extra)}"#)
        return (
            try #require(answer["identityToken"] as? String), try #require(answer["authorizationCode"] as? String),
            answer["user"] as? String
        )
    }

    /// The emulator's keys, as `siwa` would read them from `/auth/keys`.
    func keys() throws -> StaticAppleKeys {
        StaticAppleKeys(try AppleKeySet.parse(request("GET", "/auth/keys").body))
    }

    /// `siwa`'s identity-token verifier over the emulator's keys.
    func verifier(requireNonce: Bool = true) throws -> IdentityTokenVerifier {
        IdentityTokenVerifier(
            keys: try keys(), policy: IdentityTokenPolicy(clientIDs: [Self.bundleID, Self.servicesID], requireNonce: requireNonce))
    }

    /// Exchanges a code at `/auth/token`.
    func exchange(_ code: String, client: String = bundleID, redirectURI: String? = nil) throws -> Response {
        var fields = [
            ("client_id", client), ("client_secret", try secret(for: client)), ("code", code), ("grant_type", "authorization_code"),
        ]
        if let redirectURI { fields.append(("redirect_uri", redirectURI)) }
        return post("/auth/token", fields)
    }

    func refresh(_ token: String, client: String = bundleID) throws -> Response {
        post(
            "/auth/token",
            [("client_id", client), ("client_secret", try secret(for: client)), ("grant_type", "refresh_token"), ("refresh_token", token)])
    }

    func revoke(_ token: String, client: String = bundleID, hint: String? = "refresh_token") throws -> Response {
        var fields = [("client_id", client), ("client_secret", try secret(for: client)), ("token", token)]
        if let hint { fields.append(("token_type_hint", hint)) }
        return post("/auth/revoke", fields)
    }
}

extension Response {
    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] }
    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }

    /// Apple's error code in a 400 answer.
    var appleError: String? { status == 400 ? json?["error"] as? String : nil }

    /// The hidden fields of an HTML form (the consent page, or a form post to the client).
    var formFields: [String: String] {
        var fields: [String: String] = [:]
        let pattern = try! NSRegularExpression(pattern: #"<input type="hidden" name="([^"]*)" value="([^"]*)">"#)
        let text = self.text
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let name = String(text[Range(match.range(at: 1), in: text)!])
            fields[name] = Self.unescape(String(text[Range(match.range(at: 2), in: text)!]))
        }
        return fields
    }

    private static func unescape(_ text: String) -> String {
        text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }
}

/// The members of a JWT's claims, decoded without verification (for shape checks).
func jwtClaims(of token: String) throws -> [String: Any] {
    let payload = try #require(Base64URL.decode(token.split(separator: ".")[1]))
    return try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
}

/// The member names of a JSON object text, in order.
func memberOrder(_ json: String) -> [String] {
    let pattern = try! NSRegularExpression(pattern: #"(?:^\{|,)"([a-z_]+)":"#)
    return pattern.matches(in: json, range: NSRange(json.startIndex..., in: json)).map { String(json[Range($0.range(at: 1), in: json)!]) }
}

/// A clock the tests move.
final class TestTime: Sendable {
    private let value = Mutex<Int64>(Int64(Date().timeIntervalSince1970))
    var now: Int64 { value.withLock { $0 } }
    func advance(_ seconds: Int64) { value.withLock { $0 += seconds } }
}
