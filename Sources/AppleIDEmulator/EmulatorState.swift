import Foundation
import JOSE
import Synchronization

/// Everything the emulator remembers: its signing keys, test users, authorizations, codes and
/// tokens. Kept in memory behind a lock and written to the state file after every change.
struct EmulatorState: Codable {
    /// Signing keys, the current one first; all of them are served in the key set.
    var signingKeys: [SigningKey] = []
    var users: [String: TestUser] = [:]
    /// Consent given by a user to a client, keyed by `Pair.key`. Present means the `user` JSON has
    /// already been sent once.
    var authorizations: [String: Authorization] = [:]
    /// Relay addresses, stable per user and client, keyed by `Pair.key`; they outlive revocations.
    var relayAddresses: [String: String] = [:]
    var codes: [String: IssuedCode] = [:]
    /// When expired codes were last dropped.
    var codesPrunedAt: Int64 = 0
    var refreshTokens: [String: IssuedToken] = [:]
    var accessTokens: [String: IssuedToken] = [:]
    /// The team of each client a transfer moved; the others belong to the first team.
    var clientTeams: [String: String] = [:]
    /// The transfers made, oldest first.
    var transfers: [AppTransfer] = []
    /// Users whose `usermigrationinfo` calls are refused (400), to test how a transfer copes.
    var migrationFailures: Set<String> = []
    /// Access tokens of the `client_credentials` grant (scope `user.migration`).
    var migrationTokens: [String: MigrationToken] = [:]

    init() {}

    /// Reads a state file, also one written before the team-transfer members existed.
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        signingKeys = try container.decode([SigningKey].self, forKey: .signingKeys)
        users = try container.decode([String: TestUser].self, forKey: .users)
        authorizations = try container.decode([String: Authorization].self, forKey: .authorizations)
        relayAddresses = try container.decode([String: String].self, forKey: .relayAddresses)
        codes = try container.decode([String: IssuedCode].self, forKey: .codes)
        codesPrunedAt = try container.decodeIfPresent(Int64.self, forKey: .codesPrunedAt) ?? 0
        refreshTokens = try container.decode([String: IssuedToken].self, forKey: .refreshTokens)
        accessTokens = try container.decode([String: IssuedToken].self, forKey: .accessTokens)
        clientTeams = try container.decodeIfPresent([String: String].self, forKey: .clientTeams) ?? [:]
        transfers = try container.decodeIfPresent([AppTransfer].self, forKey: .transfers) ?? []
        migrationFailures = try container.decodeIfPresent(Set<String>.self, forKey: .migrationFailures) ?? []
        migrationTokens = try container.decodeIfPresent([String: MigrationToken].self, forKey: .migrationTokens) ?? [:]
    }

    /// Drops codes that can no longer be redeemed, once a minute at most (each time costs time in
    /// proportion to the codes kept; an expired code is refused whether dropped or not).
    mutating func pruneCodes(now: Int64) {
        guard now - codesPrunedAt >= 60 else { return }
        codes = codes.filter { $0.value.expiresAt > now - 3600 }
        codesPrunedAt = now
    }

    /// Ends a user's authorization of a client: its tokens stop working and the next
    /// authorization asks for consent again (and sends the `user` JSON).
    mutating func revokeAuthorization(user: String, client: String) {
        authorizations[Pair.key(user, client)] = nil
        refreshTokens = refreshTokens.filter { !($0.value.userID == user && $0.value.clientID == client) }
        accessTokens = accessTokens.filter { !($0.value.userID == user && $0.value.clientID == client) }
        codes = codes.filter { !($0.value.userID == user && $0.value.clientID == client) }
    }

    /// Deletes a user's Apple Account: every authorization and token of that user goes.
    mutating func deleteUser(_ user: String) {
        users[user] = nil
        authorizations = authorizations.filter { $0.value.userID != user }
        refreshTokens = refreshTokens.filter { $0.value.userID != user }
        accessTokens = accessTokens.filter { $0.value.userID != user }
        codes = codes.filter { $0.value.userID != user }
    }
}

/// Keys of per-(user, client) records.
enum Pair {
    static func key(_ user: String, _ client: String) -> String { user + " " + client }
}

/// An RSA-2048 signing key of the emulator, stored as PKCS#8 PEM.
struct SigningKey: Codable {
    let keyID: String
    let createdAt: Int64
    let privateKey: RSAPrivateKey

    init(keyID: String, createdAt: Int64, privateKey: RSAPrivateKey) {
        self.keyID = keyID
        self.createdAt = createdAt
        self.privateKey = privateKey
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        keyID = try container.decode(String.self, forKey: .keyID)
        createdAt = try container.decode(Int64.self, forKey: .createdAt)
        privateKey = try RSAPrivateKey(pem: try container.decode(String.self, forKey: .pem))
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(keyID, forKey: .keyID)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(try privateKey.pem(), forKey: .pem)
    }

    private enum CodingKeys: String, CodingKey {
        case keyID = "kid"
        case createdAt, pem
    }
}

/// A test person with an Apple Account.
struct TestUser: Codable {
    let id: String
    /// Apple's user identifier for the configured team.
    let sub: String
    var email: String
    var firstName: String
    var lastName: String
    /// False for Sign in with Apple at Work & School accounts.
    var emailVerified: Bool
    /// Whether mail to the user's relay addresses is forwarded.
    var relayForwarding: Bool
}

/// A user's consent to one client.
struct Authorization: Codable {
    let userID: String
    let clientID: String
    /// "Hide My Email" was chosen: the client sees the relay address.
    let hideEmail: Bool
    /// The scopes consented to (`name`, `email`).
    let scopes: [String]
    let grantedAt: Int64
}

/// A client moved from one team to another.
struct AppTransfer: Codable {
    let clientID: String
    let fromTeam: String
    let toTeam: String
    /// When; identity tokens carry `transfer_sub` for 60 days after it.
    var at: Int64
}

/// An access token of the `client_credentials` grant, for `usermigrationinfo`.
struct MigrationToken: Codable {
    let clientID: String
    let teamID: String
    let expiresAt: Int64
}

/// An authorization code: single use, five minutes, bound to its client and redirect URI.
struct IssuedCode: Codable {
    let userID: String
    let clientID: String
    /// The `redirect_uri` of the authorize request; nil for native codes.
    let redirectURI: String?
    /// The nonce claim to repeat in the exchanged identity token.
    let nonce: String?
    let authTime: Int64
    let expiresAt: Int64
    var used: Bool
}

/// A refresh or access token Apple issued to a client for a user.
struct IssuedToken: Codable {
    let userID: String
    let clientID: String
    let authTime: Int64
    let expiresAt: Int64?
}

/// The state behind a lock, written to a file after each change (temporary file, then rename,
/// so a crash never leaves half a file), unless changes are not saved.
final class EmulatorStore: Sendable {
    private let state: Mutex<EmulatorState>
    private let file: String?
    private let savesChanges: Bool

    /// Loads `file` if it exists; otherwise starts empty. Either way there is a signing key, and
    /// the file holds it.
    init(file: String?, savesChanges: Bool = true, now: Int64) throws {
        var initial = EmulatorState()
        if let file, let data = FileManager.default.contents(atPath: file) {
            initial = try JSONDecoder().decode(EmulatorState.self, from: data)
        }
        if initial.signingKeys.isEmpty {
            initial.signingKeys = [try SigningKey(keyID: AppleFormats.keyID(), createdAt: now, privateKey: RSAPrivateKey(bits: 2048))]
        }
        self.state = Mutex(initial)
        self.file = file
        self.savesChanges = savesChanges
        try state.withLock { try Self.write($0, to: file) }
    }

    /// Reads the state.
    func read<Result>(_ body: (borrowing EmulatorState) throws -> Result) rethrows -> Result {
        try state.withLock { try body($0) }
    }

    /// Changes the state in place and writes it out, for a `body` that throws only before it has
    /// changed anything: unlike `update`, it does not copy the state first, a cost in proportion
    /// to all the users, codes and tokens kept, paid on every call (a code exchange, under load).
    /// A failed write leaves the change in memory.
    func change<Result>(_ body: (inout EmulatorState) throws -> Result) throws -> Result {
        try state.withLock { current in
            let result = try body(&current)
            if savesChanges { try Self.write(current, to: file) }
            return result
        }
    }

    /// Changes the state and writes it out. If `body` throws, nothing changes.
    func update<Result>(_ body: (inout EmulatorState) throws -> Result) throws -> Result {
        try state.withLock { current in
            var copy = current
            let result = try body(&copy)
            if savesChanges { try Self.write(copy, to: file) }
            current = copy
            return result
        }
    }

    private static func write(_ state: EmulatorState, to file: String?) throws {
        guard let file else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(state)
        let temporary = file + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw EmulatorConfigurationError("cannot write \(temporary)")
        }
        if rename(temporary, file) != 0 { throw EmulatorConfigurationError("cannot rename \(temporary) to \(file)") }
    }
}
